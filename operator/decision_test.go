package operator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

var (
	rateLimited = func(d time.Duration) error {
		return &tools.RetryAfterError{After: d, Err: errors.New("Too Many Requests")}
	}
	notSent  = fmt.Errorf("dial tcp: connection refused: %w", tools.ErrNotSent)
	unknown  = fmt.Errorf("read: connection reset after write: %w", tools.ErrOutcomeUnknown)
	migrated = &tools.RepairError{Fix: &action.Fix{Target: "-1009"}, Reason: "the group moved to a supergroup", Err: errors.New("Bad Request: group chat was upgraded")}
	badArgs  = &tools.RepairError{Reason: "message text is empty", Err: errors.New("Bad Request")}
	blocked  = &tools.RefusedError{Reason: "the user blocked the bot", Err: errors.New("Forbidden: bot was blocked by the user")}
)

const (
	P  = journal.Prepared
	V  = journal.Verified
	AA = journal.AwaitingApproval
	A  = journal.Approved
	C  = journal.Committing
	RW = journal.RetryWait
	OK = journal.Committed
	U  = journal.Unknown
	F  = journal.Failed
)

// TestDecisionTable walks every row of the decision table through an approved send
// and asserts the recorded path, the sends, the waits and the normalized result.
func TestDecisionTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		script    []error
		wantPath  []journal.State
		wantSends int
		wantWaits []time.Duration
		want      action.Result // Status, SideEffect, NextAction
		reason    string        // a fragment of the result's reason
	}{
		{
			name: "success records evidence", script: nil,
			wantPath: []journal.State{P, V, AA, A, C, OK}, wantSends: 1,
			want: action.Result{Status: action.StatusSucceeded, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone},
		},
		{
			name: "429 honours retry_after", script: []error{rateLimited(7 * time.Second), nil},
			wantPath: []journal.State{P, V, AA, A, C, RW, C, OK}, wantSends: 2, wantWaits: []time.Duration{7 * time.Second},
			want: action.Result{Status: action.StatusSucceeded, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone},
		},
		{
			name: "never sent retries with jittered backoff", script: []error{notSent, notSent, nil},
			// base 1s, then 2s; rand 0.5 * jitter 0.2 takes 10% off each
			wantPath: []journal.State{P, V, AA, A, C, RW, C, RW, C, OK}, wantSends: 3,
			wantWaits: []time.Duration{900 * time.Millisecond, 1800 * time.Millisecond},
			want:      action.Result{Status: action.StatusSucceeded, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone},
		},
		{
			name: "every 429 stops after 1 + retry_budget attempts", script: []error{rateLimited(time.Second)},
			wantPath: []journal.State{P, V, AA, A, C, RW, C, RW, C, F}, wantSends: 3, wantWaits: []time.Duration{time.Second, time.Second},
			want:   action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop},
			reason: "retry budget spent",
		},
		{
			name: "retry_after beyond the wait budget stops at once", script: []error{rateLimited(5 * time.Hour)},
			wantPath: []journal.State{P, V, AA, A, C, F}, wantSends: 1,
			want:   action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop},
			reason: "asked to wait 5h0m0s",
		},
		{
			name: "migrated chat is repaired once", script: []error{migrated, nil},
			wantPath: []journal.State{P, V, AA, A, C, A, C, OK}, wantSends: 2,
			want: action.Result{Status: action.StatusSucceeded, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone},
		},
		{
			name: "a second repair is over budget", script: []error{migrated, migrated},
			wantPath: []journal.State{P, V, AA, A, C, A, C, F}, wantSends: 2,
			want:   action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop},
			reason: "repair budget spent",
		},
		{
			name: "fixable without a known fix goes back to the caller", script: []error{badArgs},
			wantPath: []journal.State{P, V, AA, A, C, F}, wantSends: 1,
			want: action.Result{Status: action.StatusRepairable, SideEffect: action.SideEffectNone, NextAction: action.NextRepair},
		},
		{
			name: "unknown outcome is verified, never resent", script: []error{unknown},
			wantPath: []journal.State{P, V, AA, A, C, U}, wantSends: 1,
			want:   action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectUnknown, NextAction: action.NextVerify},
			reason: "/resolve",
		},
		{
			name: "an unrecognised error is an unknown outcome", script: []error{errors.New("something odd")},
			wantPath: []journal.State{P, V, AA, A, C, U}, wantSends: 1,
			want: action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectUnknown, NextAction: action.NextVerify},
		},
		{
			name: "permission denied stops", script: []error{blocked},
			wantPath: []journal.State{P, V, AA, A, C, F}, wantSends: 1,
			want:   action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop},
			reason: "blocked the bot",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.script...)
			_, opID := h.send("222", "hello")
			got, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if p := h.states(opID); fmtStates(p) != fmtStates(tt.wantPath) {
				t.Errorf("path = %v, want %v", p, tt.wantPath)
			}
			if n := len(h.sender.Sent()); n != tt.wantSends {
				t.Errorf("sends = %d, want %d", n, tt.wantSends)
			}
			if w := h.clock.Waits(); fmt.Sprint(w) != fmt.Sprint(tt.wantWaits) && !(len(w) == 0 && len(tt.wantWaits) == 0) {
				t.Errorf("waits = %v, want %v", w, tt.wantWaits)
			}
			if got.Status != tt.want.Status || got.SideEffect != tt.want.SideEffect || got.NextAction != tt.want.NextAction || got.OperationID != opID {
				t.Errorf("result = %+v, want status %s side effect %s next %s op %s", got, tt.want.Status, tt.want.SideEffect, tt.want.NextAction, opID)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to mention %q", got.Reason, tt.reason)
			}
			stored, _ := h.j.Operation(context.Background(), opID)
			if stored.Result == nil || stored.Result.Status != got.Status {
				t.Errorf("journaled result = %+v, want the returned one", stored.Result)
			}
		})
	}
}

func TestSuccessEvidenceAndRepairTarget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, migrated, nil)
	_, opID := h.send("222", "hello")
	r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
	if err != nil {
		t.Fatal(err)
	}
	sent := h.sender.Sent()
	if sent[0].Target != "222" || sent[1].Target != "-1009" || sent[1].Text != "hello" {
		t.Errorf("sends = %+v, want 222 then the migrated -1009 with the same text", sent)
	}
	if r.Evidence == nil || r.Evidence.ChatID != "-1009" || len(r.Evidence.MessageIDs) != 1 {
		t.Errorf("evidence = %+v, want the message in -1009", r.Evidence)
	}
}

func TestDoomLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, blocked)
	ctx := context.Background()
	taskID, opID := h.send("222", "hello")
	if r, _ := h.op.Decide(ctx, h.approval(opID), approverID, true); r.NextAction != action.NextStop {
		t.Fatalf("first call = %+v, want a stop", r)
	}
	// The caller issues the very same call again in the same task.
	r, err := h.op.Call(ctx, taskID, callSend("222", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Reason, "possible doom loop") || r.Status != action.StatusTerminal {
		t.Errorf("repeat = %+v, want a terminal possible doom loop", r)
	}
	if p := h.states(r.OperationID); fmtStates(p) != fmtStates([]journal.State{P, F}) {
		t.Errorf("repeat path = %v, want [prepared failed]", p)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
	// A different call is not a loop.
	r, err = h.op.Call(ctx, taskID, callSend("222", "hello again"))
	if err != nil || r.Status != action.StatusPending {
		t.Errorf("different call = %+v, %v, want pending", r, err)
	}
}
