package journal_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// On PostgreSQL a write's audit records wait in audit_pending until a flush
// chains them (auditpending.go). These tests race writers of two journals (two
// processes, as the server sees them), let one die before it flushes, verify
// while writers run, and tamper with pending records.

// sendsOf runs n sends on j (created, verified, awaiting approval with its
// approval, approved): 6 records each.
func sendsOf(ctx context.Context, t *testing.T, j *journal.Journal, n int) error {
	for k := range n {
		_, op := newOp(t, j)
		if err := approve(ctx, j, op); err != nil {
			return fmt.Errorf("send %d: %w", k, err)
		}
	}
	return nil
}

// approve moves prepared operation op to awaiting approval, with an approval,
// and approves it: 4 audit records.
func approve(ctx context.Context, j *journal.Journal, op journal.Operation) error {
	a := j.NewApproval(op, 7, time.Hour)
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
		if err := j.Move(ctx, op.ID, m); err != nil {
			return err
		}
	}
	_, err := j.Decide(ctx, a.ID, journal.DecideApprove, 7)
	return err
}

// counter counts a table's rows through db, or fails the test.
func counter(ctx context.Context, t *testing.T, db *sql.DB) func(table string) int {
	return func(table string) (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// onceEach checks that the trail holds exactly one record of each transition
// and each approval asked and decided of the journal, and no other.
func onceEach(t *testing.T, name string, j *journal.Journal) {
	t.Helper()
	ctx := context.Background()
	seen := map[string]int{}
	if err := j.AuditRecords(ctx, 0, func(r audit.Record) error { seen[r.Kind+" "+r.Ref]++; return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"genesis ": 1}
	db := raw(t, name)
	for _, q := range []string{"SELECT 'transition ' || seq FROM transitions", "SELECT 'approval ' || id FROM approvals",
		"SELECT 'decision ' || id FROM approvals WHERE decision != 'pending'"} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			want[k]++
		}
		rows.Close()
	}
	for k, n := range seen {
		if want[k] != n {
			t.Errorf("%s: %d records, want %d", k, n, want[k])
		}
	}
	for k, n := range want {
		if seen[k] != n {
			t.Errorf("%s: %d records, want %d", k, seen[k], n)
		}
	}
}

func TestRacingWritersOfTwoJournalsFormOneChain(t *testing.T) {
	t.Parallel()
	name, js := twoProcesses(t)
	ctx := context.Background()
	const sends = 4
	errs := race(t, js, func(i int, j *journal.Journal) error { return sendsOf(ctx, t, j, sends) })
	if n := winners(t, "send", errs); n != racers {
		t.Fatalf("%d of %d writers went through", n, racers)
	}
	for i, j := range js {
		rep := verify(t, j)
		if rep.Fault != nil || rep.Records != int64(1+racers*sends*6) || rep.Pending != 0 {
			t.Errorf("journal %d: %+v (%v), want %d records intact, none pending", i, rep, rep.Fault, 1+racers*sends*6)
		}
	}
	onceEach(t, name, js[0])
}

// A process commits its writes and dies before it flushes: its records stay
// pending, and another journal's flusher chains them on its own (its periodic
// flush, nobody asking), after its own.
func TestAPendingRecordOfADeadProcessIsChainedByAnother(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	dead, err := journal.Open(ctx, name, journal.WithoutAuditFlush())
	if err != nil {
		t.Fatal(err)
	}
	if err := sendsOf(ctx, t, dead, 3); err != nil {
		t.Fatal(err)
	}
	db := raw(t, name)
	count := counter(ctx, t, db)
	if got := count("audit_pending"); got != 3*6 {
		t.Fatalf("%d records pending after the dead process's writes, want 18", got)
	}
	dead.Close()
	if got := count("audit_pending"); got != 3*6 {
		t.Fatalf("%d records pending after it closed without flushing, want 18", got)
	}
	alive := openWith(t, name, journal.WithFlushEvery(20*time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	for count("audit_pending") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the dead process's records were not chained within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sendsOf(ctx, t, alive, 1); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, alive); rep.Fault != nil || rep.Records != 1+4*6 {
		t.Errorf("the trail: %+v (%v), want 25 records intact", rep, rep.Fault)
	}
	onceEach(t, name, alive)
}

// Writers of two journals keep committing while a third verifies, again and
// again: facts whose records are pending, or chained by a flush of another
// journal meanwhile, are never reported as breaks.
func TestVerifyOnALiveClusterFindsNoBreak(t *testing.T) {
	t.Parallel()
	name, js := twoProcesses(t)
	checker := open(t, name, time.Now)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var wrote atomic.Int64
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := sendsOf(context.Background(), t, js[w%2], 1); err != nil {
					errs <- err
					return
				}
				wrote.Add(1)
			}
		}()
	}
	checks, pending := 0, int64(0)
	for deadline := time.Now().Add(20 * time.Second); (checks < 8 || wrote.Load() < 20) && time.Now().Before(deadline); checks++ {
		rep, err := checker.VerifyAudit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Fault != nil {
			t.Errorf("check %d, with writers running: %s", checks, rep.Fault)
			break
		}
		pending += rep.Pending
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d checks while %d sends were written; %d pending records accounted for", checks, wrote.Load(), pending)
	if rep := verify(t, checker); rep.Fault != nil || rep.Records != 1+wrote.Load()*6 {
		t.Errorf("after the writers stopped: %+v (%v), want %d records intact", rep, rep.Fault, 1+wrote.Load()*6)
	}
}

// What a pending record guards, and what it does not: until it is chained it
// is a row like the facts. Its removal leaves its fact without a record, and a
// change of it, or one added, disagrees with the facts: all found, at the
// pending record or at the fact. A fact changed together with its pending
// record is not found, as a fact changed before the trail began would not
// be without the genesis: what the chain protects is what it holds. Once
// chained, that same change is found.
func TestTamperingWithPendingRecords(t *testing.T) {
	t.Parallel()
	lastT := "(SELECT max(seq) FROM transitions)"
	pendingOf := func(kind, ref string) string {
		return "SELECT id FROM audit_pending WHERE kind = '" + kind + "' AND ref = CAST(" + ref + " AS TEXT)"
	}
	tests := []struct {
		name    string
		tamper  []string
		pending string // a query, after the tamper, of the pending id the fault names; "" for none
		kind    string
		want    string
	}{
		{"a pending record removed", []string{"DELETE FROM audit_pending WHERE kind = 'transition' AND ref = CAST(" + lastT + " AS TEXT)"},
			"", "transition", "has no audit record"},
		{"a pending record's reason changed", []string{"UPDATE audit_pending SET body = replace(body, 'resolved by @alice', 'resolved by @mallory') WHERE kind = 'transition'"},
			pendingOf("transition", lastT), "transition", "the record says"},
		{"a decision's pending record changed", []string{"UPDATE audit_pending SET body = replace(body, '\"by\":43', '\"by\":42') WHERE kind = 'decision'"},
			"SELECT id FROM audit_pending WHERE kind = 'decision' AND body LIKE '%\"by\":42%' AND body LIKE '%rejected%'", "decision", "the record says"},
		{"a pending record added for no fact", []string{"INSERT INTO audit_pending(at, kind, operation_id, ref, body) SELECT at, kind, operation_id, '999999', replace(body, '\"transition\":' || ref, '\"transition\":999999') FROM audit_pending WHERE kind = 'transition' AND ref = CAST(" + lastT + " AS TEXT)"},
			"SELECT max(id) FROM audit_pending", "transition", "is missing from the journal"},
		{"a pending record added twice", []string{"INSERT INTO audit_pending(at, kind, operation_id, ref, body) SELECT at, kind, operation_id, ref, body FROM audit_pending WHERE kind = 'decision' AND body LIKE '%rejected%'"},
			"SELECT max(id) FROM audit_pending", "decision", "has a decision record already"},
		{"a fact removed", []string{"DELETE FROM transitions WHERE seq = " + lastT},
			"SELECT max(id) FROM audit_pending WHERE kind = 'transition'", "transition", "is missing from the journal"},
		{"a rejected operation set to approved", []string{"UPDATE operations SET state = 'approved' WHERE state = 'rejected'"},
			"", "operation", "state is approved in the journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := pgtest.Fresh(t)
			c := newClock()
			j := openWith(t, name, journal.WithClock(c.Now), journal.WithLeaseClock(c.Now), journal.WithoutAuditFlush())
			lifecycle(t, j, c)
			ctx := context.Background()
			if rep, err := j.VerifyWithoutFlush(ctx); err != nil || rep.Fault != nil || rep.Pending == 0 || rep.Records != 1 {
				t.Fatalf("before: %+v, %v; want the genesis chained and the rest pending, intact", rep, err)
			}
			db := raw(t, name)
			if _, err := db.Exec("DROP TRIGGER audit_pending_no_update ON audit_pending"); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.tamper {
				if _, err := db.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			var at int64
			if tt.pending != "" {
				if err := db.QueryRow(tt.pending).Scan(&at); err != nil {
					t.Fatalf("%s: %v", tt.pending, err)
				}
			}
			for _, how := range []string{"pending", "chained"} {
				if how == "chained" {
					if err := j.FlushAudit(ctx); err != nil {
						t.Fatal(err)
					}
				}
				rep, err := j.VerifyWithoutFlush(ctx)
				if err != nil {
					t.Fatal(err)
				}
				f := rep.Fault
				switch {
				case f == nil:
					t.Fatalf("%s: not found: %+v", how, rep)
				case how == "pending" && f.Pending != at, f.Kind != tt.kind, !strings.Contains(f.Problem, tt.want):
					t.Errorf("%s: fault = %s (pending %d, kind %s); want pending %d, kind %q, %q", how, f, f.Pending, f.Kind, at, tt.kind, tt.want)
				case how == "chained" && tt.pending != "" && f.Seq == 0:
					t.Errorf("chained: fault = %s, want it at the record", f)
				}
			}
		})
	}

	t.Run("a fact changed with its pending record", func(t *testing.T) {
		name := pgtest.Fresh(t)
		c := newClock()
		j := openWith(t, name, journal.WithClock(c.Now), journal.WithLeaseClock(c.Now), journal.WithoutAuditFlush())
		lifecycle(t, j, c)
		ctx := context.Background()
		db := raw(t, name)
		both := []string{"DROP TRIGGER audit_pending_no_update ON audit_pending",
			"UPDATE transitions SET reason = 'resolved by @mallory: not delivered' WHERE seq = " + lastT,
			"UPDATE audit_pending SET body = replace(body, 'resolved by @alice', 'resolved by @mallory') WHERE kind = 'transition'"}
		for _, s := range both {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if rep, err := j.VerifyAudit(ctx); err != nil || rep.Fault != nil {
			t.Fatalf("a fact changed with its pending record, then chained: %+v, %v; want it taken as written (not found)", rep, err)
		}
		unprotect(t, db, name)
		if _, err := db.Exec("UPDATE transitions SET reason = 'resolved by @eve: not delivered' WHERE seq = " + lastT); err != nil {
			t.Fatal(err)
		}
		if f := verify(t, j).Fault; f == nil || !strings.Contains(f.Problem, "the record says") {
			t.Errorf("the same fact changed once chained: fault %v, want it found", f)
		}
		if _, err := db.Exec("UPDATE audit SET body = replace(body, 'resolved by @mallory', 'resolved by @eve') WHERE kind = 'transition'"); err != nil {
			t.Fatal(err)
		}
		if f := verify(t, j).Fault; f == nil || !strings.Contains(f.Problem, "hash does not match") {
			t.Errorf("its chained record changed to match: fault %v, want the hash to tell", f)
		}
	})
}
