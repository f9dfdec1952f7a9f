package operator

import (
	"errors"
	"fmt"

	"github.com/countersign/countersign/tools"
)

func wrap(err error) error { return fmt.Errorf("send: %w", err) }
func errNotSent() error    { return fmt.Errorf("dial: %w", tools.ErrNotSent) }
func errUnknown() error    { return fmt.Errorf("read: %w", tools.ErrOutcomeUnknown) }
func errPlain() error      { return errors.New("EOF") }
