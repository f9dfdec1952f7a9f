package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

func TestCountMatchesOperations(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testCountMatchesOperations)
}

func testCountMatchesOperations(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	task, op := newOp(t, j)
	newOp(t, j)
	if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified, Reason: "pass"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		f    journal.Filter
		want int
	}{
		{"all", journal.Filter{}, 2},
		{"one state", journal.Filter{States: []journal.State{journal.Prepared}}, 1},
		{"two states", journal.Filter{States: []journal.State{journal.Prepared, journal.Verified}}, 2},
		{"task and state", journal.Filter{TaskID: task.ID, States: []journal.State{journal.Verified}}, 1},
		{"transport", journal.Filter{Transport: "console"}, 0},
		{"limit aside", journal.Filter{Limit: 1}, 2},
	} {
		got, err := j.Count(ctx, f.f)
		if err != nil || got != f.want {
			t.Errorf("%s: Count = %d, %v; want %d", f.name, got, err, f.want)
		}
	}
}

// TestFirstOperationIsOneTransaction checks that a task, its first operation and
// the moves made with it are stored together or not at all.
func TestFirstOperationIsOneTransaction(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testFirstOperationIsOneTransaction)
}

func testFirstOperationIsOneTransaction(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op := journal.Operation{Tool: "commit_send_message", Fingerprint: "fp", Surface: "telegram", Transport: "telegram",
		Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}
	task := journal.Task{Requester: 7, Policy: p, Origin: "test:1"}
	// An illegal move among them undoes the task and the operation too.
	_, _, err = j.CreateFirstOperation(ctx, task, op, "prepared", journal.Move{From: journal.Prepared, To: journal.Committing})
	if !errors.Is(err, journal.ErrIllegalTransition) {
		t.Fatalf("illegal move: err = %v, want ErrIllegalTransition", err)
	}
	if _, err := j.TaskByOrigin(ctx, "test:1"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("task after a failed first operation: err = %v, want ErrNotFound", err)
	}
	// A move drawn in the state machine but from a state the new operation is
	// not in is refused too: its compare-and-set has nothing to miss (the row
	// is the transaction's own), so the journal checks it before.
	_, _, err = j.CreateFirstOperation(ctx, task, op, "prepared", journal.Move{From: journal.Verified, To: journal.AwaitingApproval})
	if !errors.Is(err, journal.ErrStateChanged) {
		t.Fatalf("a move from verified of a prepared operation: err = %v, want ErrStateChanged", err)
	}
	if n, _ := j.Count(ctx, journal.Filter{}); n != 0 {
		t.Errorf("%d operations after a failed first operation, want 0", n)
	}
	a := &journal.Approval{ID: journal.NewID("ap"), Requester: 7, Created: time.Now(), Expires: time.Now().Add(time.Hour)}
	stored, got, err := j.CreateFirstOperation(ctx, task, op, "prepared",
		journal.Move{From: journal.Prepared, To: journal.Verified, Reason: "verifier: pass", Verdict: "pass"},
		journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Reason: "approval requested", Approval: a})
	if err != nil {
		t.Fatal(err)
	}
	if got.TaskID != stored.ID || got.State != journal.AwaitingApproval || a.OperationID != got.ID || a.PayloadSHA256 != got.PayloadSHA256 {
		t.Errorf("stored %+v with approval %+v, task %s", got, a, stored.ID)
	}
	ts, err := j.Transitions(ctx, got.ID)
	if err != nil || len(ts) != 3 {
		t.Errorf("transitions = %+v, %v; want prepared, verified, awaiting_approval", ts, err)
	}
	// A second task from the same origin is refused, and stores nothing.
	if _, _, err := j.CreateFirstOperation(ctx, task, op, "prepared"); !errors.Is(err, journal.ErrDuplicate) {
		t.Errorf("same origin: err = %v, want ErrDuplicate", err)
	}
	if n, _ := j.Count(ctx, journal.Filter{}); n != 1 {
		t.Errorf("%d operations, want 1", n)
	}
}

// TestHandledNeedsNoFsyncAndSurvivesTheProcess checks that marking an update
// handled costs no durable commit, and is still there for the next process.
func TestHandledNeedsNoFsyncAndSurvivesTheProcess(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testHandledNeedsNoFsyncAndSurvivesTheProcess)
}

func testHandledNeedsNoFsyncAndSurvivesTheProcess(t *testing.T, path string) {
	j := open(t, path, time.Now)
	ctx := context.Background()
	fresh, err := j.Receive(ctx, []journal.InboxItem{{UpdateID: 1, Body: []byte(`{}`)}})
	if err != nil || len(fresh) != 1 {
		t.Fatalf("Receive = %v, %v", fresh, err)
	}
	before := j.Commits()
	if err := j.Handled(ctx, fresh[0].Key); err != nil {
		t.Fatal(err)
	}
	if got := j.Commits() - before; got != 0 {
		t.Errorf("Handled made %d durable commits, want 0", got)
	}
	j.Close()
	j = open(t, path, time.Now)
	if left, err := j.Unhandled(ctx); err != nil || len(left) != 0 {
		t.Errorf("after reopening: unhandled = %v, %v; want none", left, err)
	}
}
