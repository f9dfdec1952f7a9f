package journal_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// On PostgreSQL writes run side by side, each guarded by the rows it changes
// and not by a lock of the whole journal. These tests race many writers, half
// of them in a second journal on the same database (another process, as far
// as the server can tell), on one operation's move, one approval's decision,
// one quorum, one task's budget, one grant's revocation, and on the audit
// trail, and check that the promises hold: one winner, the budget exact, the
// chain intact.

// racers is how many writers race at once: more than the pool has cores, as in
// a burst.
const racers = 12

// twoProcesses opens two journals on one fresh PostgreSQL journal.
func twoProcesses(t *testing.T) (name string, js [2]*journal.Journal) {
	t.Helper()
	name = pgtest.Fresh(t)
	return name, [2]*journal.Journal{open(t, name, time.Now), open(t, name, time.Now)}
}

// race runs fn for each of racers writers at once, writer i on js[i%2], and
// returns their errors by writer.
func race(t *testing.T, js [2]*journal.Journal, fn func(i int, j *journal.Journal) error) []error {
	t.Helper()
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i, js[i%2])
		}()
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the racing writers did not finish within a minute")
	}
	return errs
}

// winners counts the nil errors, and reports any error that is not one of the
// losers' (want).
func winners(t *testing.T, what string, errs []error, want ...error) int {
	t.Helper()
	n := 0
	for i, err := range errs {
		if err == nil {
			n++
			continue
		}
		lost := false
		for _, w := range want {
			lost = lost || errors.Is(err, w)
		}
		if !lost {
			t.Errorf("%s: writer %d: %v, want nil or one of %v", what, i, err, want)
		}
	}
	return n
}

func TestRacingWritersOnPostgreSQLKeepThePromises(t *testing.T) {
	t.Parallel()
	_, js := twoProcesses(t)
	ctx := context.Background()
	j := js[0]

	t.Run("one move to committing", func(t *testing.T) {
		_, op := newOp(t, j)
		approved(t, j, op)
		errs := race(t, js, func(i int, j *journal.Journal) error {
			return j.Move(ctx, op.ID, journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true})
		})
		if n := winners(t, "move", errs, journal.ErrStateChanged); n != 1 {
			t.Errorf("%d moves to committing succeeded, want 1", n)
		}
		got, _ := j.Operation(ctx, op.ID)
		if got.State != journal.Committing || got.Attempts != 1 {
			t.Errorf("after the race: %s with %d attempts, want committing with 1", got.State, got.Attempts)
		}
	})

	t.Run("one decision", func(t *testing.T) {
		_, a := askedFor(t, j, 1)
		errs := race(t, js, func(i int, j *journal.Journal) error {
			d := journal.DecideApprove
			if i%3 == 0 {
				d = journal.DecideReject
			}
			_, err := j.Decide(ctx, a.ID, d, policy.UserID(100+i))
			return err
		})
		if n := winners(t, "decide", errs, journal.ErrDecided); n != 1 {
			t.Errorf("%d decisions were recorded, want 1", n)
		}
	})

	t.Run("a quorum of two decided by its second vote", func(t *testing.T) {
		op, a := askedFor(t, j, 2)
		var mu sync.Mutex
		decided := 0
		errs := race(t, js, func(i int, j *journal.Journal) error {
			got, err := j.Decide(ctx, a.ID, journal.DecideApprove, policy.UserID(100+i))
			if err == nil && got.Decision == journal.DecideApprove {
				mu.Lock()
				decided++
				mu.Unlock()
			}
			return err
		})
		if n := winners(t, "vote", errs, journal.ErrDecided); n != 2 {
			t.Errorf("%d votes were taken, want 2", n)
		}
		votes, err := j.Votes(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(votes) != 2 || decided != 1 {
			t.Errorf("%d votes recorded, %d of them deciding; want 2, the second deciding", len(votes), decided)
		}
		if got := stateOf(t, j, op.ID); got != journal.Approved {
			t.Errorf("operation %s after its quorum, want approved", got)
		}
	})

	t.Run("a budget spent exactly", func(t *testing.T) {
		task, first := newOp(t, j) // retry_budget 2
		ops := []journal.Operation{first}
		for range racers - 1 {
			op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: first.Tool, Fingerprint: "fp",
				Surface: "telegram", Transport: "telegram", Payload: first.Payload}, "prepared")
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op)
		}
		for _, op := range ops {
			committing(t, j, op)
		}
		errs := race(t, js, func(i int, j *journal.Journal) error {
			return j.Move(ctx, ops[i].ID, journal.Move{From: journal.Committing, To: journal.RetryWait, Spend: &journal.Spend{Retry: true}})
		})
		if n := winners(t, "retry", errs, journal.ErrRetryBudget); n != 2 {
			t.Errorf("%d retries were paid for, want the budget's 2", n)
		}
		got, err := j.Task(ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.RetriesUsed != 2 {
			t.Errorf("retries used = %d, want 2", got.RetriesUsed)
		}
	})

	t.Run("one revocation", func(t *testing.T) {
		g, err := j.GrantWindow(ctx, 44, "commit_send_message", "222", time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		errs := race(t, js, func(i int, j *journal.Journal) error {
			_, err := j.RevokeGrant(ctx, g.ID, policy.UserID(100+i))
			return err
		})
		if n := winners(t, "revoke", errs, journal.ErrGrantEnded); n != 1 {
			t.Errorf("%d revocations were recorded, want 1", n)
		}
	})

	for i, j := range js {
		if rep := verify(t, j); rep.Fault != nil {
			t.Errorf("journal %d: the audit trail after the races: %s", i, rep.Fault)
		}
	}
}

// TestRacingAppendsOnPostgreSQLKeepOneChain: writers of two processes write
// audited facts at once, and both processes flush their records into the
// trail; every write goes through and the chain has every record, in one
// line.
func TestRacingAppendsOnPostgreSQLKeepOneChain(t *testing.T) {
	t.Parallel()
	name, js := twoProcesses(t)
	ctx := context.Background()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const sends = 5
	errs := race(t, js, func(i int, j *journal.Journal) error {
		for k := range sends {
			task, err := j.CreateTask(ctx, journal.Task{Requester: 7, Policy: p})
			if err != nil {
				return err
			}
			op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
				Surface: "telegram", Transport: "telegram", Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
			if err != nil {
				return err
			}
			if err := approve(ctx, j, op); err != nil {
				return fmt.Errorf("send %d: %w", k, err)
			}
		}
		return nil
	})
	if n := winners(t, "send", errs); n != racers {
		t.Fatalf("%d of %d writers went through", n, racers)
	}
	rep := verify(t, js[1])
	if rep.Fault != nil {
		t.Fatalf("the audit trail after racing appends: %s", rep.Fault)
	}
	// Per send: created, verified, awaiting (and its approval), the decision
	// and its move; one genesis.
	if want := int64(1 + racers*sends*6); rep.Records != want {
		t.Errorf("%d records, want %d", rep.Records, want)
	}
	var rows int64
	if err := raw(t, name).QueryRowContext(ctx, "SELECT count(*) FROM audit").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != rep.Records {
		t.Errorf("%d rows in the trail, %d of them chained", rows, rep.Records)
	}
}

// TestAGuessedAppendKeepsItsRecordsExact: records whose text holds quotes,
// backslashes and what looks like SQL are stored as they were hashed, through
// audit_pending and the flush's arrays.
func TestAGuessedAppendKeepsItsRecordsExact(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	j := open(t, name, time.Now)
	ctx := context.Background()
	_, op := newOp(t, j) // its creation appends, and the journal knows the head
	reason := `it's a \'quote\' \\ "and" $1 ?; DROP TABLE audit; -- ` + "\n\ttab é 😀"
	if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified, Reason: reason}); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, j); rep.Fault != nil {
		t.Fatalf("the audit trail: %s", rep.Fault)
	}
	if got := lastTransition(t, j, op.ID); got.Reason != reason {
		t.Errorf("reason = %q, want %q", got.Reason, reason)
	}
}
