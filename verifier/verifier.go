// Package verifier is the read-only check between prepare and approval: it looks at a
// prepared payload and says pass, repair (with reasons) or stop. It can read, never
// send or write: nothing it imports can commit.
package verifier

import (
	"context"
	"fmt"
	"strings"
)

// Decision is the verifier's answer.
type Decision string

// The three answers.
const (
	Pass   Decision = "pass"
	Repair Decision = "repair"
	Stop   Decision = "stop"
)

// Input is what the verifier sees of a prepared payload.
type Input struct {
	Tool      string
	Action    string
	Target    string
	Text      string
	ParseMode string
}

// Verdict is a decision with its reasons and the number of checks that ran.
type Verdict struct {
	Decision Decision
	Reasons  []string
	Checks   int
}

// Summary is a one-line account of the verdict, for the journal and approval cards.
func (v Verdict) Summary() string {
	if v.Decision == Pass {
		return fmt.Sprintf("pass (%d checks)", v.Checks)
	}
	return fmt.Sprintf("%s: %s", v.Decision, strings.Join(v.Reasons, "; "))
}

// Checker runs every check it holds. The zero Checker has none and passes everything.
type Checker struct{}

// Check returns the verdict on one payload.
func (Checker) Check(ctx context.Context, in Input) Verdict {
	return Verdict{Decision: Pass}
}
