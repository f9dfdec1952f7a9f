package mcp

import (
	"context"
	"errors"

	"github.com/countersign/countersign/operator"
)

// requestVerification stands in for operator.RequestVerification until it lands.
func requestVerification(ctx context.Context, o *operator.Operator, opID, by string) error {
	return errors.New("verification requests are not available in this build")
}
