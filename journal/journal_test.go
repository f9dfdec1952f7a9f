package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

func open(t *testing.T, path string, now func() time.Time) *journal.Journal {
	t.Helper()
	return openWith(t, path, journal.WithClock(now), journal.WithLeaseClock(now))
}

// openWith opens the journal at path with opts, closed when the test ends.
func openWith(t *testing.T, path string, opts ...journal.Option) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func newOp(t testing.TB, j *journal.Journal) (journal.Task, journal.Operation) {
	t.Helper()
	ctx := context.Background()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := j.CreateTask(ctx, journal.Task{Requester: 7, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
		Surface: "telegram", Transport: "telegram", Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
	if err != nil {
		t.Fatal(err)
	}
	return task, op
}

func TestMoveEnforcesTheStateMachine(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testMoveEnforcesTheStateMachine)
}

func testMoveEnforcesTheStateMachine(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	_, op := newOp(t, j)
	tests := []struct {
		name string
		m    journal.Move
		want error
	}{
		{"skip approval", journal.Move{From: journal.Prepared, To: journal.Committing}, journal.ErrIllegalTransition},
		{"wrong from", journal.Move{From: journal.Verified, To: journal.Approved}, journal.ErrStateChanged},
		{"legal", journal.Move{From: journal.Prepared, To: journal.Verified, Reason: "pass"}, nil},
		{"replayed", journal.Move{From: journal.Prepared, To: journal.Verified}, journal.ErrStateChanged},
		{"out of final", journal.Move{From: journal.Committed, To: journal.Committing}, journal.ErrIllegalTransition},
	}
	for _, tt := range tests {
		err := j.Move(ctx, op.ID, tt.m)
		if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
			t.Errorf("%s: Move = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := j.Move(ctx, "op-nope", journal.Move{From: journal.Prepared, To: journal.Verified}); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Move of an unknown id = %v, want ErrNotFound", err)
	}
	ts, _ := j.Transitions(ctx, op.ID)
	if len(ts) != 2 || ts[1].Reason != "pass" {
		t.Errorf("transitions = %+v, want created and the one legal move", ts)
	}
}

// committing moves op through the states before a send, to committing.
func committing(t *testing.T, j *journal.Journal, op journal.Operation) {
	t.Helper()
	approved(t, j, op)
	if err := j.Move(context.Background(), op.ID, journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true}); err != nil {
		t.Fatal(err)
	}
}

// approved moves a new operation on to approved, as an auto-approved one goes.
func approved(t *testing.T, j *journal.Journal, op journal.Operation) {
	t.Helper()
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.Approved}} {
		if err := j.Move(context.Background(), op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOwnerMovesCommittingToUnknownOnStart(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testOwnerMovesCommittingToUnknownOnStart)
}

func testOwnerMovesCommittingToUnknownOnStart(t *testing.T, path string) {
	j := open(t, path, time.Now)
	ctx := context.Background()
	_, op := newOp(t, j)
	committing(t, j, op)
	j.Close()
	j = open(t, path, time.Now)
	if err := j.Own(ctx, "telegram"); err != nil {
		t.Fatal(err)
	}
	got, _ := j.Operation(ctx, op.ID)
	if got.State != journal.Unknown || got.Attempts != 1 {
		t.Errorf("after the owner's start: state %s attempts %d, want unknown 1", got.State, got.Attempts)
	}
	ts, _ := j.Transitions(ctx, op.ID)
	if last := ts[len(ts)-1]; last.From != journal.Committing || last.Reason != journal.ReasonCrashRecovery {
		t.Errorf("last transition = %+v, want committing -> unknown for %s", last, journal.ReasonCrashRecovery)
	}
	as, _ := j.Attempts(ctx, op.ID)
	if len(as) != 1 || as[0].Outcome != "interrupted" {
		t.Errorf("attempts = %+v, want one interrupted", as)
	}
	// A second start has nothing left to recover.
	j.Close()
	j = open(t, path, time.Now)
	if err := j.Own(ctx, "telegram"); err != nil || len(j.Recovered()) != 0 {
		t.Errorf("second start: %v, recovered %v; want nothing", err, j.Recovered())
	}
}

// Defect 3: a second process that opens the journal while the owner is sending
// (countersign ops list, countersign vault resolve, countersign console) must not take the live commit for
// a dead one, and a second owner of the same transport is refused.
func TestSecondProcessNeverStealsALiveCommit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testSecondProcessNeverStealsALiveCommit)
}

func testSecondProcessNeverStealsALiveCommit(t *testing.T, path string) {
	ctx := context.Background()
	owner := open(t, path, time.Now)
	if err := owner.Own(ctx, "telegram"); err != nil {
		t.Fatal(err)
	}
	_, op := newOp(t, owner)
	committing(t, owner, op) // the request is on the wire

	reader := open(t, path, time.Now) // countersign ops list, countersign vault resolve
	if got, _ := reader.Operation(ctx, op.ID); got.State != journal.Committing {
		t.Errorf("a reader's open moved the live commit to %s", got.State)
	}
	console := open(t, path, time.Now) // countersign console owns its own transport only
	if err := console.Own(ctx, "console"); err != nil {
		t.Fatalf("the console could not own its transport beside the bot: %v", err)
	}
	if got, _ := console.Operation(ctx, op.ID); got.State != journal.Committing {
		t.Errorf("the console's start moved the bot's live commit to %s", got.State)
	}
	second := open(t, path, time.Now) // a second countersign run
	err := second.Own(ctx, "telegram")
	var owned *journal.OwnedError
	if !errors.As(err, &owned) || !errors.Is(err, journal.ErrOwned) || owned.PID != os.Getpid() {
		t.Fatalf("a second owner = %v, want an OwnedError naming this process", err)
	}
	if got, _ := second.Operation(ctx, op.ID); got.State != journal.Committing {
		t.Errorf("the refused owner moved the live commit to %s", got.State)
	}
	// The live owner's own outcome still lands.
	if err := owner.Move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Committed, AttemptOutcome: "committed"}); err != nil {
		t.Errorf("the owner's committed after the others came and went: %v", err)
	}
	// Ownership ends with its owner.
	owner.Close()
	if err := second.Own(ctx, "telegram"); err != nil {
		t.Errorf("after the owner closed: Own = %v, want ownership", err)
	}
}

func TestDecideFirstWinsAndExpiry(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testDecideFirstWinsAndExpiry)
}

func testDecideFirstWinsAndExpiry(t *testing.T, name string) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	j := open(t, name, clock)
	ctx := context.Background()
	pending := func() *journal.Approval {
		_, op := newOp(t, j)
		j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified})
		a := j.NewApproval(op, 7, time.Hour)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := pending()
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 9); err != nil {
		t.Fatal(err)
	}
	got, err := j.Decide(ctx, a.ID, journal.DecideReject, 8)
	if !errors.Is(err, journal.ErrDecided) || got.Decision != journal.DecideApprove || got.DecidedBy != 9 {
		t.Errorf("second decision = %+v, %v; want ErrDecided showing the first", got, err)
	}
	b := pending()
	now = now.Add(time.Hour)
	if _, err := j.Decide(ctx, b.ID, journal.DecideApprove, 9); !errors.Is(err, journal.ErrExpired) {
		t.Errorf("late decision = %v, want ErrExpired", err)
	}
	if op, _ := j.Operation(ctx, b.OperationID); op.State != journal.Expired {
		t.Errorf("state after a late decision = %s, want expired (recorded)", op.State)
	}
	c := pending()
	now = now.Add(2 * time.Hour)
	expired, err := j.ExpireDue(ctx)
	if err != nil || len(expired) != 1 || expired[0].ID != c.ID {
		t.Errorf("ExpireDue = %v, %v; want [%s]", expired, err, c.ID)
	}
}

func TestBudgetsArePaidByTheMoveTheyBuy(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testBudgetsArePaidByTheMoveTheyBuy)
}

func testBudgetsArePaidByTheMoveTheyBuy(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	task, op := newOp(t, j) // retry_budget 2, wait 5m, repair 1
	for _, m := range []journal.Move{
		{From: journal.Prepared, To: journal.Verified},
		{From: journal.Verified, To: journal.Approved},
		{From: journal.Approved, To: journal.Committing, StartAttempt: true},
	} {
		if err := j.Move(ctx, op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	retry := func(wait time.Duration) error {
		err := j.Move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.RetryWait, Spend: &journal.Spend{Retry: true, Wait: wait}})
		if err == nil {
			err = j.Move(ctx, op.ID, journal.Move{From: journal.RetryWait, To: journal.Committing, StartAttempt: true})
		}
		return err
	}
	if err := retry(4 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := retry(2 * time.Minute); !errors.Is(err, journal.ErrWaitBudget) {
		t.Errorf("over the wait budget = %v, want ErrWaitBudget", err)
	}
	if got, _ := j.Operation(ctx, op.ID); got.State != journal.Committing {
		t.Errorf("a move the budget refused happened: state %s, want committing", got.State)
	}
	if err := retry(time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := retry(0); !errors.Is(err, journal.ErrRetryBudget) {
		t.Errorf("third retry = %v, want ErrRetryBudget", err)
	}
	repair := journal.Move{From: journal.Committing, To: journal.Approved, Spend: &journal.Spend{Repair: true}}
	if err := j.Move(ctx, op.ID, repair); err != nil {
		t.Fatal(err)
	}
	// A move that does not happen (the operation is no longer committing) spends nothing.
	if err := j.Move(ctx, op.ID, repair); !errors.Is(err, journal.ErrStateChanged) {
		t.Errorf("repair from the wrong state = %v, want ErrStateChanged", err)
	}
	j.Move(ctx, op.ID, journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true})
	if err := j.Move(ctx, op.ID, repair); !errors.Is(err, journal.ErrRepairBudget) {
		t.Errorf("second repair = %v, want ErrRepairBudget", err)
	}
	got, _ := j.Task(ctx, task.ID)
	if got.RetriesUsed != 2 || got.Waited != 5*time.Minute || got.RepairsUsed != 1 {
		t.Errorf("task = %+v, want 2 retries, 5m waited, 1 repair", got)
	}
}

func TestInbox(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testInbox)
}

func testInbox(t *testing.T, name string) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	j := open(t, name, func() time.Time { return now })
	ctx := context.Background()
	batch := []journal.InboxItem{{UpdateID: 7, Body: []byte(`{"update_id":7}`)}, {UpdateID: 8, Body: []byte(`{"update_id":8}`)}}
	stored, err := j.Receive(ctx, batch)
	if err != nil || len(stored) != 2 || stored[0].Key != "update:7" {
		t.Fatalf("Receive = %v, %v; want both, keyed by update_id when they come without a key", stored, err)
	}
	if fresh, _ := j.Receive(ctx, batch[1:]); len(fresh) != 0 {
		t.Errorf("a redelivered update came back as fresh: %v", fresh)
	}
	j.Handled(ctx, stored[0].Key)
	left, _ := j.Unhandled(ctx)
	if len(left) != 1 || left[0].UpdateID != 8 {
		t.Errorf("Unhandled = %v, want [8]", left)
	}
	now = now.Add(8 * 24 * time.Hour)
	if n, err := j.PruneInbox(ctx, now.Add(-7*24*time.Hour)); err != nil || n != 1 {
		t.Errorf("PruneInbox = %d, %v; want the handled one only", n, err)
	}
}

func TestInboxTellsARenumberedUpdateFromAReplay(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testInboxTellsARenumberedUpdateFromAReplay)
}

func testInboxTellsARenumberedUpdateFromAReplay(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	lastWeek := journal.InboxItem{UpdateID: 1, Key: "message:100:1", Body: []byte(`{"update_id":1,"message":{"message_id":1}}`)}
	thisWeek := journal.InboxItem{UpdateID: 1, Key: "message:100:7", Body: []byte(`{"update_id":1,"message":{"message_id":7}}`)}
	if fresh, err := j.Receive(ctx, []journal.InboxItem{lastWeek}); err != nil || len(fresh) != 1 {
		t.Fatalf("Receive = %v, %v", fresh, err)
	}
	if err := j.Handled(ctx, lastWeek.Key); err != nil {
		t.Fatal(err)
	}
	fresh, err := j.Receive(ctx, []journal.InboxItem{thisWeek})
	if err != nil || len(fresh) != 1 || fresh[0].Key != thisWeek.Key {
		t.Fatalf("Receive(renumbered update 1) = %v, %v; want it fresh: same number, another message", fresh, err)
	}
	if fresh, _ := j.Receive(ctx, []journal.InboxItem{thisWeek}); len(fresh) != 0 {
		t.Errorf("a redelivered update came back as fresh: %v", fresh)
	}
	left, _ := j.Unhandled(ctx)
	if len(left) != 1 || left[0].Key != thisWeek.Key || string(left[0].Body) != string(thisWeek.Body) {
		t.Errorf("Unhandled = %v, want only this week's update 1", left)
	}
}

// SQLite only: it upgrades a SQLite file of schema version 2; PostgreSQL starts at
// the schema as it stands (migrations/postgres/0001_init.sql).
func TestInboxKeysUpdatesStoredBeforeKeysByWhatTheyCarry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	ctx := context.Background()
	// A journal at schema version 2, as the last release left it, with updates in
	// its inbox: one handled, two not.
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migrations/sqlite/0001_init.sql", "migrations/sqlite/0002_telegram.sql"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(src)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	msg := `{"update_id":41,"message":{"message_id":5,"chat":{"id":100,"type":"private"},"text":"/ops"}}`
	tap := `{"update_id":42,"callback_query":{"id":"4000000000000000001","data":"ap1:x:y"}}`
	other := `{"update_id":43,"edited_message":{"message_id":5,"chat":{"id":100,"type":"private"}}}`
	_, err = db.Exec(`INSERT INTO inbox(update_id, body, received_at, handled_at) VALUES (41, ?, 1, 2), (42, ?, 1, 0), (43, ?, 1, 0);
		INSERT INTO tasks(id, requester, policy, created_at, origin) VALUES ('task-unhandled', 100, '{}', 1, 'telegram:update:41'),
			('task-pruned', 100, '{}', 1, 'telegram:update:7');
		PRAGMA user_version = 2`, msg, tap, other)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	j := open(t, path, time.Now)
	left, err := j.Unhandled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range left {
		keys = append(keys, it.Key)
	}
	if want := []string{"callback_query:4000000000000000001", "update:43"}; !slices.Equal(keys, want) {
		t.Errorf("unhandled keys = %v, want %v", keys, want)
	}
	// A task started by an update still in the inbox names it by its key now, so
	// that its replay continues the task; a task whose update is gone keeps its name.
	for origin, want := range map[string]string{"telegram:message:100:5": "task-unhandled", "telegram:update:7": "task-pruned"} {
		if task, err := j.TaskByOrigin(ctx, origin); err != nil || task.ID != want {
			t.Errorf("task of %s = %q, %v; want %s", origin, task.ID, err, want)
		}
	}
	again := []journal.InboxItem{{UpdateID: 41, Key: "message:100:5", Body: []byte(msg)}, {UpdateID: 42, Key: "callback_query:4000000000000000001", Body: []byte(tap)}}
	if fresh, err := j.Receive(ctx, again); err != nil || len(fresh) != 0 {
		t.Errorf("Receive(the stored updates again) = %v, %v; want no fresh one", fresh, err)
	}
}

// SQLite only: the size limit (WithSizeLimit) is SQLite's max_page_count.
func TestAFullDiskRefusesTheWriteAndKeepsWhatWasThere(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	ctx := context.Background()
	j := open(t, path, time.Now)
	_, before := newOp(t, j)
	j.Close()

	// The limit freezes the file at its present size: the next page it needs is refused.
	full, err := journal.Open(ctx, path, journal.WithSizeLimit(1))
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	task, err := full.CreateTask(ctx, journal.Task{Requester: 7, Summary: strings.Repeat("a long request ", 2000)})
	if !journal.IsFull(err) {
		t.Fatalf("CreateTask on a full disk = %+v, %v; want an error IsFull recognises", task, err)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not say the disk is full", err)
	}
	if journal.IsFull(errors.New("database is locked")) {
		t.Error("IsFull recognises an unrelated error")
	}
	if op, err := full.Operation(ctx, before.ID); err != nil || op.State != before.State {
		t.Errorf("the operation written before = %+v, %v; want it unchanged", op, err)
	}
	ops, _ := full.Operations(ctx, journal.Filter{})
	if len(ops) != 1 {
		t.Errorf("operations = %d, want only the one written before the disk filled", len(ops))
	}
}

// Uncarded returns the pending approvals without a card that are older than the
// cut-off: a younger one is still on its way to its card.
func TestUncardedLeavesYoungApprovalsToTheirRequest(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testUncardedLeavesYoungApprovalsToTheirRequest)
}

func testUncardedLeavesYoungApprovalsToTheirRequest(t *testing.T, name string) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	j := open(t, name, func() time.Time { return now })
	ctx := context.Background()
	ask := func() *journal.Approval {
		_, op := newOp(t, j)
		j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified})
		a := j.NewApproval(op, 7, time.Hour)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	old, carded := ask(), ask()
	j.AddCard(ctx, journal.Card{Ref: carded.ID, ChatID: 100, MessageID: 1, Text: "card"})
	now = now.Add(time.Minute)
	ask() // the request that made it is showing its card right now
	got, err := j.Uncarded(ctx, "telegram", now.Add(-time.Second))
	if err != nil || len(got) != 1 || got[0].ID != old.ID {
		t.Errorf("Uncarded = %v, %v; want only %s", got, err, old.ID)
	}
}

// Owner tells a process beside the journal (a stdio countersign mcp) whether a bot sends,
// and which, without becoming or hindering the owner: a look does not turn away an
// owner that starts at that moment, and ownership ends with its owner.
func TestOwnerSaysWhoSends(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testOwnerSaysWhoSends)
}

func testOwnerSaysWhoSends(t *testing.T, path string) {
	ctx := context.Background()
	looker := open(t, path, time.Now)
	if pid, owned, err := looker.Owner("telegram"); err != nil || owned || pid != 0 {
		t.Fatalf("before any owner: Owner = %d, %v, %v; want not owned", pid, owned, err)
	}
	// A file left by an owner that has stopped, and a look at it that lasts.
	first := open(t, path, time.Now)
	if err := first.Own(ctx, "telegram"); err != nil {
		t.Fatal(err)
	}
	first.Close()
	if err := looker.LookFor("telegram", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	owner := open(t, path, time.Now)
	if err := owner.Own(ctx, "telegram"); err != nil {
		t.Fatalf("Own while another process looked: %v", err)
	}
	pid, owned, err := looker.Owner("telegram")
	if err != nil || !owned || pid != os.Getpid() {
		t.Errorf("with an owner: Owner = %d, %v, %v; want owned by %d", pid, owned, err, os.Getpid())
	}
	if _, owned, _ := looker.Owner("console"); owned {
		t.Error("another transport is owned too, want not")
	}
	if _, _, err := looker.Owner("../x"); err == nil {
		t.Error("a bad transport name was accepted")
	}
	owner.Close()
	if _, owned, err := looker.Owner("telegram"); err != nil || owned {
		t.Errorf("after the owner closed: Owner = %v, %v; want not owned", owned, err)
	}
}

// The owner's watch reads only the approvals of the last moments (UncardedSince),
// and an owner expires only its own transport's approvals (ExpireDueOf): the
// surfaces that show another transport's hear of their expiry from its owner.
func TestTheOwnersLooksAreItsOwnAndRecent(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTheOwnersLooksAreItsOwnAndRecent)
}

func testTheOwnersLooksAreItsOwnAndRecent(t *testing.T, name string) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	j := open(t, name, func() time.Time { return now })
	ctx := context.Background()
	ask := func(transport string) *journal.Approval {
		task, op := newOp(t, j)
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: op.Tool, Fingerprint: "fp", Surface: "mcp",
			Transport: transport, Payload: op.Payload}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified})
		a := j.NewApproval(op, 7, time.Hour)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	older, console := ask("telegram"), ask("console")
	now = now.Add(2 * time.Minute)
	recent := ask("telegram")
	got, err := j.UncardedSince(ctx, "telegram", now.Add(-time.Minute))
	if err != nil || len(got) != 1 || got[0].ID != recent.ID {
		t.Errorf("UncardedSince = %v, %v; want only %s (not %s)", got, err, recent.ID, older.ID)
	}
	now = now.Add(2 * time.Hour)
	expired, err := j.ExpireDueOf(ctx, "telegram")
	if err != nil || len(expired) != 2 {
		t.Errorf("ExpireDueOf(telegram) = %v, %v; want the two telegram approvals", expired, err)
	}
	if a, _ := j.Approval(ctx, console.ID); a.Decision != journal.Pending {
		t.Errorf("the console's approval is %s, want it left to the console", a.Decision)
	}
}
