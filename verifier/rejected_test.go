package verifier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// rejection is one payload a person rejected, in a task from a chat.
type rejection struct {
	task, chat string
	verifier.Sent
}

// rejections is a History of rejected payloads only.
type rejections struct {
	history
	rejected []rejection
}

func (h rejections) Rejected(ctx context.Context, task, chat string, since time.Time) ([]verifier.Sent, error) {
	var out []verifier.Sent
	for _, r := range h.rejected {
		if (r.task == task || chat != "" && r.chat == chat) && !r.At.Before(since) {
			out = append(out, r.Sent)
		}
	}
	return out, nil
}

// TestARejectedPayloadAskedAgainStops: the same payload (its content, and its
// text as its recipient reads it) rejected in this task or from this chat within
// the window stops, naming the rejection; a stated change, another text or
// content, another chat's and task's rejection, an older one or a window of 0
// lets it through.
func TestARejectedPayloadAskedAgainStops(t *testing.T) {
	asked := func(f func(in *verifier.Input)) verifier.Input {
		return with(func(in *verifier.Input) {
			in.Task, in.Chat, in.Content = "task-2", "111", "content-a"
			if f != nil {
				f(in)
			}
		})
	}
	h := rejections{rejected: []rejection{
		{"task-1", "111", verifier.Sent{OperationID: "op-r1", Text: "Hello, readers.", State: "rejected", Content: "content-a", At: noon.Add(-2 * time.Hour)}},
		{"task-9", "999", verifier.Sent{OperationID: "op-r9", Text: "Evening edition", State: "rejected", Content: "content-a", At: noon.Add(-time.Hour)}},
		{"task-1", "111", verifier.Sent{OperationID: "op-old", Text: "Morning edition", State: "rejected", Content: "content-a", At: noon.Add(-25 * time.Hour)}},
	}}
	refused := func(op, at string) []string {
		return []string{"rejected: a person rejected this same request as operation " + op + " (" + at +
			"); it is not asked again unless the request says what changed since (the \"changed\" argument)"}
	}
	r1 := refused("op-r1", "2026-03-02 10:00 UTC")
	c := verifier.New(policy.Verify{RejectedWindow: 24 * time.Hour}, h, clock)
	runCases(t, c, []verdictCase{
		{"same payload from the same chat", asked(nil), verifier.Stop, r1},
		{"read the same: a zero-width space and another case", asked(func(in *verifier.Input) { in.Text = "hello,\u200b READERS." }), verifier.Stop, r1},
		{"same payload in the same task from no chat", asked(func(in *verifier.Input) { in.Task, in.Chat = "task-1", "" }), verifier.Stop, r1},
		{"a stated change", asked(func(in *verifier.Input) { in.Changed = "the person asked for it again" }), verifier.Pass, nil},
		{"another text", asked(func(in *verifier.Input) { in.Text = "Hello, readers!" }), verifier.Pass, nil},
		{"another content (target, files, message, address)", asked(func(in *verifier.Input) { in.Content = "content-b" }), verifier.Pass, nil},
		{"rejected in another chat's task", asked(func(in *verifier.Input) { in.Text = "Evening edition" }), verifier.Pass, nil},
		{"rejected before the window", asked(func(in *verifier.Input) { in.Text = "Morning edition" }), verifier.Pass, nil},
		{"no content given", asked(func(in *verifier.Input) { in.Content = "" }), verifier.Pass, nil},
	})
	runCases(t, verifier.New(policy.Verify{}, h, clock), []verdictCase{
		{"window 0 is off", asked(nil), verifier.Pass, nil},
	})
	runCases(t, verifier.New(policy.Verify{RejectedWindow: time.Hour}, brokenRejections{}, clock), []verdictCase{
		{"history unavailable", asked(nil), verifier.Stop, []string{"rejected: history unavailable: database is locked"}},
	})
}

// brokenRejections fails every read of rejections.
type brokenRejections struct{ history }

func (brokenRejections) Rejected(context.Context, string, string, time.Time) ([]verifier.Sent, error) {
	return nil, errors.New("database is locked")
}
