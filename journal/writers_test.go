package journal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// writerKinds is one iteration of each kind of write the journal makes, each on
// rows of its own (so that none fails for a reason of the journal's rules), and
// the reads beside them. w numbers the worker, i the iteration.
var writerKinds = []struct {
	name string
	run  func(ctx context.Context, f writerFixture, w, i int) error
}{
	{"receive and handled", func(ctx context.Context, f writerFixture, w, i int) error {
		fresh, err := f.j.Receive(ctx, []journal.InboxItem{{UpdateID: int64(w*1000 + i), Key: fmt.Sprintf("w%d:%d", w, i), Body: []byte(`{}`)}})
		if err != nil {
			return err
		}
		return f.j.Handled(ctx, fresh[0].Key)
	}},
	{"prune inbox", func(ctx context.Context, f writerFixture, w, i int) error {
		_, err := f.j.PruneInbox(ctx, time.Now())
		return err
	}},
	{"task and card", func(ctx context.Context, f writerFixture, w, i int) error {
		t, err := f.j.CreateTask(ctx, journal.Task{Requester: 7, Policy: f.p})
		if err != nil {
			return err
		}
		return f.j.AddCard(ctx, journal.Card{Ref: t.ID, ChatID: 1, MessageID: i, Text: "card"})
	}},
	{"decide", func(ctx context.Context, f writerFixture, w, i int) error {
		a, err := f.awaiting(ctx, w, i, time.Hour)
		if err != nil {
			return err
		}
		_, err = f.j.Decide(ctx, a.ID, journal.DecideApprove, 7)
		return err
	}},
	{"expire due", func(ctx context.Context, f writerFixture, w, i int) error {
		if _, err := f.awaiting(ctx, w, i, -time.Second); err != nil {
			return err
		}
		_, err := f.j.ExpireDue(ctx)
		return err
	}},
	{"withdraw", func(ctx context.Context, f writerFixture, w, i int) error {
		a, err := f.awaiting(ctx, w, i, time.Hour)
		if err != nil {
			return err
		}
		return f.j.Withdraw(ctx, a.OperationID, "withdrawn")
	}},
	{"commit in parts", func(ctx context.Context, f writerFixture, w, i int) error {
		o, err := f.committing(ctx, "telegram", w, i)
		if err != nil {
			return err
		}
		for _, step := range []func() error{
			func() error { return f.j.PartDelivered(ctx, o.ID, 1, action.Evidence{MessageIDs: []int64{1}}) },
			func() error { return f.j.StartAttempt(ctx, o.ID, "part 2") },
			func() error { return f.j.SetResult(ctx, o.ID, action.Result{Status: action.StatusSucceeded}) },
			func() error { return f.j.SetEnvelope(ctx, o.ID, "envelope.md") },
			func() error {
				return f.j.Move(ctx, o.ID, journal.Move{From: journal.Committing, To: journal.Committed, AttemptOutcome: "committed"})
			},
		} {
			if err := step(); err != nil {
				return err
			}
		}
		return nil
	}},
	{"own and recover", func(ctx context.Context, f writerFixture, w, i int) error {
		transport := fmt.Sprintf("own%d-%d", w, i)
		if _, err := f.committing(ctx, transport, w, i); err != nil {
			return err
		}
		return f.j.Own(ctx, transport)
	}},
	{"open", func(ctx context.Context, f writerFixture, w, i int) error {
		j, err := journal.Open(ctx, f.path, journal.WithBusyTimeout(busyTimeout))
		if err != nil {
			return err
		}
		return j.Close()
	}},
	{"read", func(ctx context.Context, f writerFixture, w, i int) error {
		if _, err := f.j.Operations(ctx, journal.Filter{Limit: 20}); err != nil {
			return err
		}
		if _, err := f.j.Unhandled(ctx); err != nil {
			return err
		}
		_, err := f.j.Uncarded(ctx, "telegram", time.Now())
		return err
	}},
}

// busyTimeout is none: a write that meets another inside SQLite fails at once.
const busyTimeout = 0

type writerFixture struct {
	j    *journal.Journal
	path string
	p    *policy.Policy
}

// awaiting stores a task and its first operation, awaiting an approval that
// expires after ttl, in one write.
func (f writerFixture) awaiting(ctx context.Context, w, i int, ttl time.Duration) (*journal.Approval, error) {
	now := time.Now()
	a := &journal.Approval{ID: journal.NewID("ap"), Requester: 7, Created: now, Expires: now.Add(ttl)}
	_, _, err := f.j.CreateFirstOperation(ctx, journal.Task{Requester: 7, Policy: f.p, Origin: fmt.Sprintf("test:%d:%d", w, i)},
		operation("telegram"), "prepared",
		journal.Move{From: journal.Prepared, To: journal.Verified},
		journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a})
	return a, err
}

// committing stores an operation of transport and moves it to committing.
func (f writerFixture) committing(ctx context.Context, transport string, w, i int) (journal.Operation, error) {
	t, err := f.j.CreateTask(ctx, journal.Task{Requester: 7, Policy: f.p})
	if err != nil {
		return journal.Operation{}, err
	}
	o := operation(transport)
	o.TaskID = t.ID
	return f.j.CreateOperation(ctx, o, "prepared",
		journal.Move{From: journal.Prepared, To: journal.Verified},
		journal.Move{From: journal.Verified, To: journal.Approved},
		journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true})
}

func operation(transport string) journal.Operation {
	return journal.Operation{Tool: "commit_send_message", Fingerprint: "fp", Surface: "telegram", Transport: transport,
		Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}
}

// TestWritersOfOneProcessQueue runs every kind of write at once, from several
// journals open on one new file (their migrations included), with no busy
// timeout: a write that met another of this process inside SQLite, rather than
// queueing on the writer lock, would fail with "database is locked".
func TestWritersOfOneProcessQueue(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testWritersOfOneProcessQueue)
}

func testWritersOfOneProcessQueue(t *testing.T, path string) {
	ctx := context.Background()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const journals, iterations = 3, 12
	js := make([]*journal.Journal, journals)
	errs := make(chan error, journals+len(writerKinds)*journals*iterations)
	var wg sync.WaitGroup
	for n := range js {
		wg.Go(func() {
			j, err := journal.Open(ctx, path, journal.WithBusyTimeout(busyTimeout))
			if err != nil {
				errs <- fmt.Errorf("open: %w", err)
				return
			}
			js[n] = j
			t.Cleanup(func() { j.Close() })
		})
	}
	wg.Wait()
	if t.Failed() || len(errs) > 0 {
		t.Fatal(<-errs)
	}
	start := make(chan struct{})
	for k, kind := range writerKinds {
		for n, j := range js {
			w := k*journals + n
			f := writerFixture{j: j, path: path, p: p}
			wg.Go(func() {
				<-start
				for i := range iterations {
					if err := kind.run(ctx, f, w, i); err != nil {
						errs <- fmt.Errorf("%s (worker %d, iteration %d): %w", kind.name, w, i, err)
						return
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAWriterWaitsForTheLockUntilItsContextEnds holds the writer lock as a long
// write would: reads still answer, a write whose context ends stops waiting with
// the context's error and changes nothing, and once the lock is free it goes
// through.
func TestAWriterWaitsForTheLockUntilItsContextEnds(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAWriterWaitsForTheLockUntilItsContextEnds)
}

func testAWriterWaitsForTheLockUntilItsContextEnds(t *testing.T, path string) {
	j := open(t, path, time.Now)
	other := open(t, path, time.Now) // another journal on the file shares the lock
	ctx := context.Background()
	_, op := newOp(t, j)
	release, err := other.HoldWriterLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Operation(ctx, op.ID); err != nil {
		t.Errorf("a read while the lock is held: %v", err)
	}
	move := journal.Move{From: journal.Prepared, To: journal.Verified}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := j.Move(short, op.ID, move); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write while the lock is held = %v, want its context's deadline", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := j.Handled(cancelled, "update:1"); !errors.Is(err, context.Canceled) {
		t.Errorf("a lazy write with its context cancelled = %v, want context.Canceled", err)
	}
	if got, _ := j.Operation(ctx, op.ID); got.State != journal.Prepared {
		t.Errorf("state after the write gave up = %s, want prepared", got.State)
	}
	release()
	if err := j.Move(ctx, op.ID, move); err != nil {
		t.Errorf("the write once the lock is free: %v", err)
	}
}
