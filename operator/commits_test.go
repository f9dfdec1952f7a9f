package operator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// commitSpy is a sender that notes, when a request leaves, how many durable
// commits the journal had made and where the operation stood.
type commitSpy struct {
	j       *journal.Journal
	commits []int64
	states  []journal.State
}

func (s *commitSpy) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	s.commits = append(s.commits, s.j.Commits())
	ops, err := s.j.Operations(ctx, journal.Filter{States: []journal.State{journal.Committing}})
	if err == nil && len(ops) == 1 {
		s.states = append(s.states, ops[0].State)
	}
	return tools.Delivery{ChatID: m.Target, MessageID: int64(len(s.commits))}, nil
}

// TestSendCostsFourDurableCommits pins what one approved send costs the journal: one
// durable commit for each step the design needs (approval asked, approved,
// committing, committed) and none more, with every transition still journaled. A
// step that gains a transaction of its own fails here.
func TestSendCostsFourDurableCommits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The harness runs the real verifier: it reads the journal, and must write nothing.
	spy := &commitSpy{j: h.j}
	op := h.sibling(rigtest.Sender(spy))
	ctx := context.Background()
	var opID string
	var d operator.Decision
	steps := []struct {
		name    string
		commits int64
		run     func() error
		path    []journal.State
	}{
		{"approval asked (task, prepared, verified, awaiting_approval, approval)", 1, func() error {
			_, r, err := op.Begin(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "send", Origin: "test:1"}, callSend("222", "hello"))
			opID = r.OperationID
			return err
		}, []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval}},
		{"approved (the tap's compare-and-set)", 1, func() error {
			var err error
			d, err = op.Record(ctx, h.approval(opID), approverID, true)
			return err
		}, []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved}},
		{"committing, then committed with its attempt and result", 2, func() error {
			r, err := op.Proceed(ctx, d)
			if err == nil && r.Status != action.StatusSucceeded {
				t.Errorf("Proceed = %+v, want succeeded", r)
			}
			return err
		}, []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed}},
	}
	for _, s := range steps {
		before := h.j.Commits()
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := h.j.Commits() - before; got != s.commits {
			t.Errorf("%s: %d durable commits, want %d", s.name, got, s.commits)
		}
		if got := h.states(opID); fmtStates(got) != fmtStates(s.path) {
			t.Errorf("%s: journaled path %v, want %v", s.name, got, s.path)
		}
	}
	// Write ahead: the request left after committing was durable, and before the
	// commit that records its outcome.
	if len(spy.commits) != 1 || len(spy.states) != 1 || spy.states[0] != journal.Committing {
		t.Fatalf("at the send: commits %v, states %v; want one send, made while committing", spy.commits, spy.states)
	}
	if got, want := spy.commits[0], h.j.Commits()-1; got != want {
		t.Errorf("the request left after %d durable commits, want %d (committing durable, committed not yet)", got, want)
	}
	as, err := h.j.Attempts(ctx, opID)
	if err != nil || len(as) != 1 || as[0].Outcome != "committed" {
		t.Errorf("attempts = %+v, %v; want one, committed", as, err)
	}
}

// TestBeginStoresNothingTwice checks that Begin refuses an origin seen before
// without storing a task or an operation, and that a refused tool stores nothing.
func TestBeginStoresNothingTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	first, r, err := h.op.Begin(ctx, journal.Task{Requester: operatorID, Chat: "1", Origin: "test:7"}, callSend("222", "once"))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("Begin = %+v, %v; want pending", r, err)
	}
	if got, err := h.j.TaskByOrigin(ctx, "test:7"); err != nil || got.ID != first.ID {
		t.Fatalf("TaskByOrigin = %+v, %v; want the task Begin returned (%s)", got, err, first.ID)
	}
	for _, c := range []struct {
		name   string
		origin string
		call   operator.Call
		want   error
	}{
		{"replayed origin", "test:7", callSend("222", "twice"), journal.ErrDuplicate},
		{"unknown tool", "test:8", operator.Call{Tool: "commit_nothing", Args: sendArgs("222", "x")}, operator.ErrUnknownTool},
	} {
		before := h.j.Commits()
		_, _, err := h.op.Begin(ctx, journal.Task{Requester: operatorID, Chat: "1", Origin: c.origin}, c.call)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: Begin err = %v, want %v", c.name, err, c.want)
		}
		if got := h.j.Commits() - before; got != 0 {
			t.Errorf("%s: %d durable commits, want none", c.name, got)
		}
	}
	ops, err := h.j.Operations(ctx, journal.Filter{})
	if err != nil || len(ops) != 1 {
		t.Errorf("operations = %d, %v; want only the first call's", len(ops), err)
	}
}
