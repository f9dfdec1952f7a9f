package operator_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

func TestFiftyApproversAtOnceCommitOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	const n = 50
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		errs    = make([]error, n)
		results = make([]action.Result, n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = h.op.Decide(context.Background(), apID, approverID, true)
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
			if results[i].Status != action.StatusSucceeded {
				t.Errorf("winner's result = %+v, want succeeded", results[i])
			}
		case !errors.Is(err, operator.ErrDecided):
			t.Errorf("decision %d: %v, want ErrDecided", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d decisions won, want exactly 1", won)
	}
	if got := len(h.sender.Sent()); got != 1 {
		t.Errorf("sends = %d, want exactly 1", got)
	}
}

func TestRejectAfterApproveIsNoOp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	if _, err := h.op.Decide(ctx, apID, approverID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := h.op.Decide(ctx, apID, operatorID, false); !errors.Is(err, operator.ErrDecided) {
		t.Errorf("reject after approve = %v, want ErrDecided", err)
	}
	if s := h.state(opID); s != journal.Committed {
		t.Errorf("state = %s, want committed", s)
	}
	a, _ := h.j.Approval(ctx, apID)
	if a.Decision != journal.DecideApprove || a.DecidedBy != approverID {
		t.Errorf("approval = %+v, want approved by %d", a, approverID)
	}
}

func TestRejectCommitsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, opID := h.send("222", "hello")
	r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || len(h.sender.Sent()) != 0 {
		t.Errorf("reject = %+v with %d sends, want a stop and no send", r, len(h.sender.Sent()))
	}
	if p := h.states(opID); fmtStates(p) != fmtStates([]journal.State{P, V, AA, journal.Rejected}) {
		t.Errorf("path = %v", p)
	}
}

func TestExpiredApprovalCommitsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	h.clock.Advance(h.pol.ApprovalTTL)
	r, err := h.op.Decide(context.Background(), apID, approverID, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || len(h.sender.Sent()) != 0 {
		t.Errorf("expired approve = %+v with %d sends, want a stop and no send", r, len(h.sender.Sent()))
	}
	if p := h.states(opID); fmtStates(p) != fmtStates([]journal.State{P, V, AA, journal.Expired}) {
		t.Errorf("path = %v", p)
	}
}

func TestNonApproverChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	if _, err := h.op.Decide(ctx, apID, strangerID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("stranger's decision = %v, want ErrNotApprover", err)
	}
	a, _ := h.j.Approval(ctx, apID)
	if a.Decision != journal.Pending || h.state(opID) != journal.AwaitingApproval || len(h.sender.Sent()) != 0 {
		t.Errorf("after a stranger: approval %q, state %s, %d sends; want pending, awaiting, 0", a.Decision, h.state(opID), len(h.sender.Sent()))
	}
	// The real approver can still decide.
	if _, err := h.op.Decide(ctx, apID, approverID, true); err != nil {
		t.Errorf("approver after stranger: %v", err)
	}
}

func TestPayloadChangedAfterApprovalIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	// Someone edits the journal by hand between the card and the tap (the SQLite
	// file: this edit is SQLite's SQL, so the test stays SQLite's).
	if journal.IsPostgres(h.file) {
		t.Skip("edits the SQLite file by hand")
	}
	db, err := sql.Open("sqlite3", h.file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE operations SET payload = json_set(payload, '$.text', 'hello, send money') WHERE id = ?`, opID); err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Decide(ctx, apID, approverID, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.sender.Sent()) != 0 || r.NextAction != action.NextStop {
		t.Errorf("changed payload: %+v with %d sends, want a stop and no send", r, len(h.sender.Sent()))
	}
	if p := h.states(opID); fmtStates(p) != fmtStates([]journal.State{P, V, AA, A, F}) {
		t.Errorf("path = %v, want it failed before committing", p)
	}
}

func TestAutoApproveRuleSkipsTheTap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.AutoApprove = append(h.pol.AutoApprove, policyRule("commit_send_message", "555"))
	h.open()
	ctx := context.Background()
	task, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "auto"})
	r, err := h.op.Call(ctx, task.ID, callSend("555", "daily digest"))
	if err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("auto-approved call = %+v, %v; want succeeded", r, err)
	}
	if p := h.states(r.OperationID); fmtStates(p) != fmtStates([]journal.State{P, V, AA, A, C, OK}) {
		t.Errorf("path = %v", p)
	}
	// Another chat still needs a tap.
	r, _ = h.op.Call(ctx, task.ID, callSend("556", "daily digest"))
	if r.Status != action.StatusPending {
		t.Errorf("other chat = %+v, want pending", r)
	}
}

// A policy edited while a task is in flight never widens that task: a rule
// added since does not skip its tap, and an approver removed since may no longer
// decide; an approver of both policies may.
func TestAPolicyEditNeverWidensATask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	task, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "before the edit"})
	// The policy is edited and the bot restarted: auto-approve everything to 555,
	// and approver 2 removed.
	h.pol = testPolicy(t)
	h.pol.AutoApprove = append(h.pol.AutoApprove, policyRule("commit_send_message", "555"))
	h.pol.Access.Approvers = []policy.UserID{operatorID}
	h.open()
	r, err := h.op.Call(ctx, task.ID, callSend("555", "hi"))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("call in the old task = %+v, %v; want pending under the old policy", r, err)
	}
	apID := h.approval(r.OperationID)
	if _, err := h.op.Decide(ctx, apID, approverID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Errorf("approver removed since: Decide = %v, want ErrNotApprover", err)
	}
	if r, err := h.op.Decide(ctx, apID, operatorID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Errorf("approver of both policies: Decide = %+v, %v; want succeeded", r, err)
	}
}

func TestCrashMidCommitNeverResends(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	// The process approves and writes committing, then dies before the answer.
	if _, err := h.j.Decide(ctx, apID, journal.DecideApprove, approverID); err != nil {
		t.Fatal(err)
	}
	if err := h.j.Move(ctx, opID, journal.Move{From: A, To: C, Reason: "attempt 1", StartAttempt: true}); err != nil {
		t.Fatal(err)
	}
	h.j.Close()
	h.open()
	if got := h.j.Recovered(); len(got) != 1 || got[0] != opID {
		t.Errorf("Recovered = %v, want [%s]", got, opID)
	}
	ts, _ := h.j.Transitions(ctx, opID)
	last := ts[len(ts)-1]
	if last.From != C || last.To != U || last.Reason != "crash_recovery" {
		t.Errorf("last transition = %+v, want committing -> unknown for crash_recovery", last)
	}
	if _, err := h.op.Retry(ctx, opID); !errors.Is(err, operator.ErrNotRetryable) {
		t.Errorf("Retry of an unresolved unknown = %v, want ErrNotRetryable", err)
	}
	if _, err := h.op.Decide(ctx, apID, approverID, true); !errors.Is(err, operator.ErrDecided) {
		t.Errorf("replayed approval = %v, want ErrDecided", err)
	}
	if err := h.op.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	h.op.Wait()
	if n := len(h.sender.Sent()); n != 0 {
		t.Errorf("sends after restart = %d, want 0", n)
	}
	// Only a resolution opens the way to a retry.
	if _, err := h.op.Resolve(ctx, opID, false, "tester"); err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Retry(ctx, opID)
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("Retry after not_delivered = %+v, %v; want pending a new approval", r, err)
	}
	if _, err := h.op.Decide(ctx, h.approval(opID), approverID, true); err != nil {
		t.Fatal(err)
	}
	if n := len(h.sender.Sent()); n != 1 || h.state(opID) != OK {
		t.Errorf("after retry: %d sends, state %s; want 1, committed", n, h.state(opID))
	}
}

func TestResolvedDeliveredRefusesRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	h.op.Decide(ctx, h.approval(opID), approverID, true)
	if _, err := h.op.Resolve(ctx, opID, true, "tester"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.op.Retry(ctx, opID); !errors.Is(err, operator.ErrNotRetryable) {
		t.Errorf("Retry after delivered = %v, want ErrNotRetryable", err)
	}
	if _, err := h.op.Resolve(ctx, opID, false, "tester"); !errors.Is(err, operator.ErrNotResolvable) {
		t.Errorf("second Resolve = %v, want ErrNotResolvable", err)
	}
}

func TestRestartResumesTheScheduledWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rateLimited(40*time.Second), nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	// The process dies during the wait: the context ends before the timer.
	h.clock.onSleep = cancel
	if _, err := h.op.Decide(ctx, apID, approverID, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide with a dying process = %v, want context.Canceled", err)
	}
	op, _ := h.j.Operation(context.Background(), opID)
	if op.State != RW || !op.RetryAt.Equal(h.clock.Now().Add(40*time.Second)) {
		t.Fatalf("journaled = %s at %s, want retry_wait due in 40s", op.State, op.RetryAt)
	}
	h.clock.onSleep = nil
	h.clock.Advance(15 * time.Second) // the restart took 15 s
	h.open()
	got := make(chan action.Result, 1)
	h.op = h.sibling(rigtest.Sender(h.sender))
	onOutcome(h.op, func(_ string, r action.Result) { got <- r })
	if err := h.op.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.Status != action.StatusSucceeded {
			t.Errorf("resumed result = %+v, want succeeded", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("resumed operation reported nothing")
	}
	if w := h.clock.Waits(); len(w) != 1 || w[0] != 25*time.Second {
		t.Errorf("waits = %v, want only the 25s left", w)
	}
	if n := len(h.sender.Sent()); n != 2 {
		t.Errorf("sends = %d, want 2 (the 429 and the retry)", n)
	}
}
