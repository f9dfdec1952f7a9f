package verifier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// sent is one earlier payload in the fake history, with its target.
type sent struct {
	target string
	verifier.Sent
}

// history is a slice-backed History; a history whose first entry has the target
// "broken" fails every read.
type history []sent

func (h history) Recent(ctx context.Context, target string, since time.Time) ([]verifier.Sent, error) {
	if len(h) > 0 && h[0].target == "broken" {
		return nil, errors.New("database is locked")
	}
	var out []verifier.Sent
	for _, s := range h {
		if s.target == target && !s.At.Before(since) {
			out = append(out, s.Sent)
		}
	}
	return out, nil
}

var _ verifier.History = history{}

func TestDuplicates(t *testing.T) {
	h := history{
		{"@news_desk", verifier.Sent{OperationID: "op-old", Text: "Hello, readers.", State: "committed", At: noon.Add(-25 * time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-a1", Text: "  hello,\n READERS. ", State: "committed", At: noon.Add(-3 * time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-b2", Text: "Hello, readers.", State: "awaiting_approval", At: noon.Add(-time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-c3", Text: "Morning edition", State: "unknown", At: noon.Add(-2 * time.Hour)}},
		{"@other_desk", verifier.Sent{OperationID: "op-d4", Text: "Evening edition", State: "committed", At: noon.Add(-time.Hour)}},
	}
	c := verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock)
	runCases(t, c, []verdictCase{
		{"latest of two matches", ok(), verifier.Stop, []string{"duplicates: same text as operation op-b2 (awaiting_approval 2026-03-02 11:00 UTC)"}},
		{"unknown outcome counts", text("MORNING   edition"), verifier.Stop, []string{"duplicates: same text as operation op-c3 (unknown 2026-03-02 10:00 UTC)"}},
		{"other target", text("Evening edition"), verifier.Pass, nil},
		{"new text", text("Hello, readers!"), verifier.Pass, nil},
	})
	runCases(t, verifier.New(policy.Verify{DuplicateWindow: 90 * time.Minute}, h, clock), []verdictCase{
		{"inside a short window", ok(), verifier.Stop, []string{"duplicates: same text as operation op-b2 (awaiting_approval 2026-03-02 11:00 UTC)"}},
		{"outside a short window", text("Morning edition"), verifier.Pass, nil},
	})
	broken := history{{target: "broken"}}
	runCases(t, verifier.New(policy.Verify{DuplicateWindow: time.Hour}, broken, clock), []verdictCase{
		{"history unavailable", ok(), verifier.Stop, []string{"duplicates: history unavailable: database is locked"}},
	})
	runCases(t, verifier.New(policy.Verify{}, broken, clock), []verdictCase{
		{"window 0 is off", ok(), verifier.Pass, nil},
	})
}
