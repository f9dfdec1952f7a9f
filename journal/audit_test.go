package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/testclock"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// asked moves a new operation on to awaiting_approval with an approval that
// expires after ttl, and returns the approval.
func asked(t *testing.T, j *journal.Journal, op journal.Operation, ttl time.Duration) *journal.Approval {
	t.Helper()
	ctx := context.Background()
	a := j.NewApproval(op, 7, ttl)
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified, Reason: "pass", Verdict: "pass (3 checks)"},
		{From: journal.Verified, To: journal.AwaitingApproval, Reason: "approval asked", Approval: a}} {
		if err := j.Move(ctx, op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// lifecycle writes what a journal holds after a day's work: a send approved and
// committed, a rejection, an expiry, an approval withdrawn, and an unknown
// outcome resolved by a person.
func lifecycle(t *testing.T, j *journal.Journal, c *testclock.Clock) {
	t.Helper()
	ctx := context.Background()
	move := func(id string, m journal.Move) {
		t.Helper()
		if err := j.Move(ctx, id, m); err != nil {
			t.Fatal(err)
		}
	}
	_, sent := newOp(t, j)
	a := asked(t, j, sent, time.Hour)
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); err != nil {
		t.Fatal(err)
	}
	move(sent.ID, journal.Move{From: journal.Approved, To: journal.Committing, Reason: "sending", StartAttempt: true})
	r := action.Result{Status: action.StatusSucceeded, OperationID: sent.ID, SideEffect: action.SideEffectCommitted,
		Evidence: &action.Evidence{ChatID: "222", MessageIDs: []int64{9}}}
	move(sent.ID, journal.Move{From: journal.Committing, To: journal.Committed, Reason: "sent", Result: &r, AttemptOutcome: "committed"})

	_, rejected := newOp(t, j)
	if _, err := j.Decide(ctx, asked(t, j, rejected, time.Hour).ID, journal.DecideReject, 43); err != nil {
		t.Fatal(err)
	}
	_, expired := newOp(t, j)
	asked(t, j, expired, time.Minute)
	c.Add(2 * time.Minute)
	if got, err := j.ExpireDue(ctx); err != nil || len(got) != 1 {
		t.Fatalf("ExpireDue = %v, %v; want the one approval", got, err)
	}
	_, withdrawn := newOp(t, j)
	asked(t, j, withdrawn, time.Hour)
	if err := j.Withdraw(ctx, withdrawn.ID, "cancelled by 7"); err != nil {
		t.Fatal(err)
	}
	beyondOneTap(t, j, c)
	_, unknown := newOp(t, j)
	committing(t, j, unknown)
	move(unknown.ID, journal.Move{From: journal.Committing, To: journal.Unknown, Reason: "timeout after the request was sent"})
	move(unknown.ID, journal.Move{From: journal.Unknown, To: journal.NotDelivered, Reason: "resolved by @alice: not delivered"})
}

// beyondOneTap writes the approvals beyond one tap: a quorum of two, an edit
// before approval, an escalation, a card of two approved by one grant, and a
// window grant used and revoked.
func beyondOneTap(t *testing.T, j *journal.Journal, c *testclock.Clock) {
	t.Helper()
	ctx := context.Background()
	_, quorum := newOp(t, j)
	q := j.NewApproval(quorum, 7, time.Hour)
	q.Required = 2
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified, Reason: "pass"},
		{From: journal.Verified, To: journal.AwaitingApproval, Reason: "approval asked", Approval: q}} {
		if err := j.Move(ctx, quorum.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := j.Escalate(ctx, q.ID); err != nil || !ok {
		t.Fatalf("Escalate = %v, %v", ok, err)
	}
	for _, by := range []int64{42, 44} {
		if _, err := j.Decide(ctx, q.ID, journal.DecideApprove, policy.UserID(by)); err != nil {
			t.Fatal(err)
		}
	}
	_, edited := newOp(t, j)
	first := asked(t, j, edited, time.Hour)
	next := j.NewApproval(edited, 7, time.Hour)
	if _, err := j.EditPayload(ctx, first.ID, action.Payload{Action: "send_message", Target: "222", Text: "hi, corrected"}, 42, next); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Decide(ctx, next.ID, journal.DecideApprove, 44); err != nil {
		t.Fatal(err)
	}
	var items []journal.GrantItem
	for range 2 {
		_, op := newOp(t, j)
		a := asked(t, j, op, time.Hour)
		items = append(items, journal.GrantItem{Approval: a.ID, Operation: op.ID, PayloadSHA256: a.PayloadSHA256})
	}
	if _, _, err := j.GrantApprovals(ctx, 42, "task", items); err != nil {
		t.Fatal(err)
	}
	g, err := j.GrantWindow(ctx, 42, "commit_send_message", "222", c.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_, windowed := newOp(t, j)
	if _, err := j.DecideBallot(ctx, asked(t, j, windowed, time.Hour).ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Grant: g.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RevokeGrant(ctx, g.ID, 44); err != nil {
		t.Fatal(err)
	}
}

func verify(t *testing.T, j *journal.Journal) journal.AuditReport {
	t.Helper()
	rep, err := j.VerifyAudit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// raw opens the journal's database for a test to edit behind its back.
func raw(t *testing.T, name string) *sql.DB {
	t.Helper()
	driver := "sqlite3"
	if journal.IsPostgres(name) {
		driver = "pgx"
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// unprotect drops the triggers that keep the trail append-only, as a person
// with write access to the database can.
func unprotect(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	stmts := []string{"DROP TRIGGER audit_no_update", "DROP TRIGGER audit_no_delete"}
	if journal.IsPostgres(name) {
		stmts = []string{"DROP TRIGGER audit_append_only ON audit"}
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAnUntouchedJournalVerifies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAnUntouchedJournalVerifies)
}

func testAnUntouchedJournalVerifies(t *testing.T, name string) {
	c := newClock()
	j := open(t, name, c.Now)
	if rep := verify(t, j); rep.Fault != nil || rep.Records != 1 {
		t.Fatalf("a new journal: %+v, want its genesis record alone, intact", rep)
	}
	lifecycle(t, j, c)
	rep := verify(t, j)
	if rep.Fault != nil {
		t.Fatalf("after a lifecycle: %s", rep.Fault)
	}
	// The genesis; 4 operations asked for approval (prepared, verified,
	// awaiting_approval, the decision's move), 2 more for the send (committing,
	// committed); 6 transitions for the unknown outcome, resolved. Beyond one
	// tap: 5 more operations asked and decided (a quorum of two votes, escalated;
	// an edit, whose move asks again; two under one card's grant, two votes; one
	// under a window grant, a vote, and the grant revoked).
	kinds := map[string]int{}
	j.AuditRecords(context.Background(), 0, func(r audit.Record) error { kinds[r.Kind]++; return nil })
	want := map[string]int{audit.Genesis: 1, audit.Transition: 4*4 + 2 + 6 + 5*4 + 1, audit.Approval: 4 + 5 + 1,
		audit.Decision: 4 + 5 + 1, audit.Vote: 2 + 2 + 1, audit.Escalation: 1, audit.Edit: 1,
		audit.Grant: 2, audit.Revoke: 1}
	total := 0
	for k, n := range want {
		total += n
		if kinds[k] != n {
			t.Errorf("%s records = %d, want %d (all: %v)", k, kinds[k], n, kinds)
		}
	}
	if rep.Records != int64(total) || len(rep.Head) != 64 {
		t.Errorf("report = %+v, want %d records and a head", rep, total)
	}
	if _, err := raw(t, name).Exec("UPDATE audit SET body = '{}' WHERE seq = 2"); err == nil {
		t.Error("an UPDATE of the trail succeeded; want it refused as append-only")
	}
}

func TestEveryTamperIsFoundAndNamed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testEveryTamperIsFoundAndNamed)
}

func testEveryTamperIsFoundAndNamed(t *testing.T, name string) {
	lastT := "(SELECT max(seq) FROM transitions)"
	recOf := func(kind, ref string) string {
		return "SELECT seq FROM audit WHERE kind = '" + kind + "' AND ref = CAST(" + ref + " AS TEXT)"
	}
	tests := []struct {
		name   string
		tamper []string
		at     string // a query of the seq the fault names; "" for a fact without a record
		kind   string
		want   string
	}{
		{"a transition's reason edited", []string{"UPDATE transitions SET reason = 'sent twice' WHERE seq = " + lastT},
			recOf("transition", lastT), "transition", "the record says"},
		{"a transition removed", []string{"DELETE FROM transitions WHERE seq = " + lastT},
			recOf("transition", lastT), "transition", "is missing from the journal"},
		{"a transition added by hand", []string{"INSERT INTO transitions(operation_id, from_state, to_state, reason, at) SELECT id, 'not_delivered', 'approved', 'retry', 0 FROM operations WHERE state = 'not_delivered'"},
			"", "transition", "has no audit record"},
		{"an audit record deleted", []string{"DELETE FROM audit WHERE seq = 5"}, "SELECT 6", "", "seq 6 where 5 was due"},
		{"the last audit record deleted", []string{"DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)"}, "", "transition", "has no audit record"},
		{"two records swapped", []string{"UPDATE audit SET seq = -1 WHERE seq = 5", "UPDATE audit SET seq = 5 WHERE seq = 6", "UPDATE audit SET seq = 6 WHERE seq = -1"},
			"SELECT 5", "", "prev_hash is not the hash of the record before"},
		{"a record's body edited", []string{"UPDATE audit SET body = replace(body, '\"by\":42', '\"by\":44') WHERE kind = 'decision'"},
			"SELECT min(seq) FROM audit WHERE kind = 'decision'", "decision", "hash does not match"},
		{"a record's reference edited", []string{"UPDATE audit SET ref = ref || '0' WHERE kind = 'decision'"},
			"SELECT min(seq) FROM audit WHERE kind = 'decision'", "decision", "hash does not match"},
		{"a record's operation edited", []string{"UPDATE audit SET operation_id = 'op_elsewhere' WHERE kind = 'decision'"},
			"SELECT min(seq) FROM audit WHERE kind = 'decision'", "decision", "hash does not match"},
		{"a record's hash changed", []string{"UPDATE audit SET hash = CASE WHEN substr(hash, 1, 1) = 'f' THEN 'e' ELSE 'f' END || substr(hash, 2) WHERE seq = 3"},
			"SELECT 3", "", "hash does not match"},
		{"an approval's decider changed", []string{"UPDATE approvals SET decided_by = 99 WHERE decision = 'approved'"},
			"SELECT min(seq) FROM audit WHERE kind = 'decision'", "decision", "approved by 99"},
		{"a rejection turned into an approval", []string{"UPDATE approvals SET decision = 'approved' WHERE decision = 'rejected'"},
			"SELECT seq FROM audit WHERE kind = 'decision' AND body LIKE '%rejected%'", "decision", "the record says rejected"},
		{"a rejected operation set to approved", []string{"UPDATE operations SET state = 'approved' WHERE state = 'rejected'"},
			"", "operation", "state is approved in the journal; its last transition record says rejected"},
		{"a payload's text changed", []string{"UPDATE operations SET payload = replace(payload, '\"hi\"', '\"hello\"') WHERE state = 'committed'"},
			"", "operation", "the payload was changed"},
		{"an approval's payload hash changed", []string{"UPDATE approvals SET payload_sha256 = 'aaaa' WHERE decision = 'approved'"},
			"SELECT min(seq) FROM audit WHERE kind = 'approval'", "approval", "the record says"},
		{"the genesis record deleted", []string{"DELETE FROM audit WHERE seq = 1"}, "SELECT 2", "", "seq 2 where 1 was due"},
		{"a vote of a quorum removed", []string{"DELETE FROM approval_votes WHERE voter = 44 AND grant_id = ''"},
			"SELECT seq FROM audit WHERE kind = 'vote' AND body LIKE '%\"by\":44%'", "vote", "is missing from the journal"},
		{"a vote added by hand", []string{"INSERT INTO approval_votes(approval_id, voter, at) SELECT id, 45, 1 FROM approvals WHERE required = 2"},
			"", "vote", "the vote of 45 on"},
		{"the payload an edit replaced changed", []string{"UPDATE payload_edits SET old_payload = replace(old_payload, '\"hi\"', '\"forged\"')"},
			"SELECT seq FROM audit WHERE kind = 'edit'", "edit", "it was changed"},
		{"an edit removed", []string{"DELETE FROM payload_edits"},
			"SELECT seq FROM audit WHERE kind = 'edit'", "edit", "is missing from the journal"},
		{"a window grant made longer", []string{"UPDATE grants SET until_at = until_at + 3600000 WHERE kind = 'window'"},
			"SELECT seq FROM audit WHERE kind = 'grant' AND body LIKE '%window%'", "grant", "the record says"},
		{"a grant's revocation undone", []string{"UPDATE grants SET revoked_at = 0, revoked_by = 0"},
			"SELECT seq FROM audit WHERE kind = 'revoke'", "revoke", "the record says"},
		{"an approval given under a grant passed off as a tap", []string{"UPDATE approvals SET grant_id = '' WHERE grant_id != ''"},
			"SELECT min(seq) FROM audit WHERE kind = 'decision' AND body LIKE '%grant%'", "decision", "the record says"},
		{"an escalation made up", []string{"UPDATE approvals SET escalated_at = 5 WHERE decision = 'rejected'"},
			"", "escalation", "has no audit record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fresh := t.TempDir() + "/j.db"
			if journal.IsPostgres(name) {
				fresh = pgtest.Fresh(t)
			}
			c := newClock()
			j := open(t, fresh, c.Now)
			lifecycle(t, j, c)
			if err := j.FlushAudit(context.Background()); err != nil { // the records chained, to be tampered with
				t.Fatal(err)
			}
			db := raw(t, fresh)
			var at int64
			if tt.at != "" {
				if err := db.QueryRow(tt.at).Scan(&at); err != nil {
					t.Fatalf("%s: %v", tt.at, err)
				}
			}
			unprotect(t, db, fresh)
			for _, s := range tt.tamper {
				if _, err := db.Exec(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			rep := verify(t, j)
			f := rep.Fault
			switch {
			case f == nil:
				t.Fatalf("not found: %+v", rep)
			case f.Seq != at || (tt.kind != "" && f.Kind != tt.kind) || !strings.Contains(f.Problem, tt.want):
				t.Errorf("fault = %s (seq %d, kind %s); want seq %d, kind %q, %q", f, f.Seq, f.Kind, at, tt.kind, tt.want)
			}
		})
	}
}

func TestAFailedWriteLeavesNoAuditRecord(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAFailedWriteLeavesNoAuditRecord)
}

// testAFailedWriteLeavesNoAuditRecord fails a move after its transition and
// its record were written (its approval's id is taken): the transaction rolls
// back both, and the trail stays whole.
func testAFailedWriteLeavesNoAuditRecord(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, time.Now)
	_, first := newOp(t, j)
	a := asked(t, j, first, time.Hour)
	before := verify(t, j)
	_, second := newOp(t, j)
	if err := j.Move(ctx, second.ID, journal.Move{From: journal.Prepared, To: journal.Verified}); err != nil {
		t.Fatal(err)
	}
	mid := verify(t, j)
	clash := *a
	clash.OperationID = second.ID
	err := j.Move(ctx, second.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: &clash})
	if err == nil {
		t.Fatal("a move with a taken approval id succeeded")
	}
	after := verify(t, j)
	if after.Fault != nil || after.Records != mid.Records || after.Head != mid.Head || mid.Records != before.Records+2 {
		t.Errorf("records %d, %d, %d (fault %v); want the failed move to leave none", before.Records, mid.Records, after.Records, after.Fault)
	}
}

func TestConcurrentWritersChainOneAfterAnother(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testConcurrentWritersChainOneAfterAnother)
}

// Two journals open on one store (two processes' worth of pools) write at once:
// each append follows the head the other left, never the same one.
func testConcurrentWritersChainOneAfterAnother(t *testing.T, name string) {
	js := []*journal.Journal{open(t, name, time.Now), open(t, name, time.Now)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := js[i%2]
			_, op := newOp(t, j)
			a := j.NewApproval(op, 7, time.Hour)
			err := errors.Join(j.Move(context.Background(), op.ID, journal.Move{From: journal.Prepared, To: journal.Verified}),
				j.Move(context.Background(), op.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a}))
			if _, e := j.Decide(context.Background(), a.ID, journal.DecideApprove, 42); e != nil {
				err = errors.Join(err, e)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if rep := verify(t, js[0]); rep.Fault != nil || rep.Records != 1+8*6 {
		t.Errorf("report = %+v (%v), want 49 records intact", rep, rep.Fault)
	}
}

func TestTheTrailCommitsToTheHistoryBeforeIt(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTheTrailCommitsToTheHistoryBeforeIt)
}

// testTheTrailCommitsToTheHistoryBeforeIt upgrades a journal that had history
// before the trail: the genesis record's digest covers it, an approval pending
// then is decided after with a record of its own, and an edit of the old
// history is found at the genesis.
func testTheTrailCommitsToTheHistoryBeforeIt(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	lifecycle(t, j, c)
	_, waiting := newOp(t, j)
	a := asked(t, j, waiting, 24*time.Hour)
	j.Close()
	db := raw(t, name)
	// Back to before the trail: the migrations after it undone too.
	later := []string{"DROP INDEX operations_live", "DROP INDEX operations_noted", "DROP INDEX operations_rejected", "DROP INDEX approvals_open", "DROP INDEX approvals_open_created", "DROP INDEX cards_message",
		"CREATE INDEX operations_state ON operations(state)", "CREATE INDEX operations_transport ON operations(transport, state)", "CREATE INDEX operations_claimed ON operations(claimed_by, state)",
		"CREATE INDEX approvals_pending ON approvals(decision, expires_at)", "CREATE INDEX approvals_pending_created ON approvals(decision, created_at)",
		"ALTER TABLE operations DROP COLUMN seen_key", "DROP TABLE passkey_links", "DROP TABLE passkey_credentials", "ALTER TABLE approval_votes DROP COLUMN receipt", "DROP TABLE totp_factors", "ALTER TABLE approval_votes DROP COLUMN step_up", "ALTER TABLE approvals DROP COLUMN step_up", "ALTER TABLE approvals DROP COLUMN shown_at", "ALTER TABLE approvals DROP COLUMN shown_by", "DROP TABLE slot_waits", "DROP TABLE strangers_told", "DROP TABLE chat_turns", "DROP TABLE send_slots", "DROP TABLE approval_votes", "DROP TABLE payload_edits", "DROP TABLE grants",
		"ALTER TABLE approvals DROP COLUMN required", "ALTER TABLE approvals DROP COLUMN escalated_at", "ALTER TABLE approvals DROP COLUMN grant_id"}
	downgrade := append(later, "DROP TABLE audit", "PRAGMA user_version = 9")
	if journal.IsPostgres(name) {
		downgrade = append(later, "DROP TABLE audit_pending", "DROP TABLE audit", "DROP FUNCTION audit_append_only()", "DELETE FROM schema_migrations WHERE version >= 5")
	}
	for _, s := range downgrade {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	j = open(t, name, c.Now)
	if m := j.Migrated(); len(m) < 1 || !strings.HasSuffix(m[0], "_audit.sql") {
		t.Fatalf("migrated %v, want the audit trail's migration", m)
	}
	if rep := verify(t, j); rep.Fault != nil || rep.Records != 1 {
		t.Fatalf("after the upgrade: %+v (%v), want the genesis alone, intact", rep, rep.Fault)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); err != nil {
		t.Fatal(err)
	}
	lifecycle(t, j, c)
	if rep := verify(t, j); rep.Fault != nil {
		t.Fatalf("after more work: %s", rep.Fault)
	}
	unprotect(t, db, name)
	tampers := []struct{ name, sql, want string }{
		{"an old transition edited", "UPDATE transitions SET reason = 'forged' WHERE seq = 2", "no longer matches its digest"},
		{"the decision of an approval pending at genesis changed", "UPDATE approvals SET decided_by = 1 WHERE id = '" + a.ID + "'", "the record says approved by 42"},
	}
	for _, tt := range tampers {
		if _, err := db.Exec(tt.sql); err != nil {
			t.Fatal(err)
		}
		if f := verify(t, j).Fault; f == nil || !strings.Contains(f.Problem, tt.want) {
			t.Errorf("%s: fault %v, want %q", tt.name, f, tt.want)
		}
	}
}

func TestTheTrailCostsNoCommitOfItsOwn(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTheTrailCostsNoCommitOfItsOwn)
}

// testTheTrailCostsNoCommitOfItsOwn: a move and its record are one durable
// commit, as the move alone was.
func testTheTrailCostsNoCommitOfItsOwn(t *testing.T, name string) {
	j := open(t, name, time.Now)
	_, op := newOp(t, j)
	before, records := j.Commits(), verify(t, j).Records
	if err := j.Move(context.Background(), op.ID, journal.Move{From: journal.Prepared, To: journal.Verified}); err != nil {
		t.Fatal(err)
	}
	if got := j.Commits() - before; got != 1 {
		t.Errorf("a move cost %d durable commits, want 1", got)
	}
	if got := verify(t, j).Records - records; got != 1 {
		t.Errorf("a move appended %d records, want 1", got)
	}
}

// A record is written as the fact made it, whatever its text holds: markup,
// quotes, control characters, line separators, any script. On SQLite the
// records of a write go in as one JSON argument, which must give every byte
// back; the chain's hashes and the check of the facts against their records
// say whether it did. A reason or a verdict often quotes another service's
// error, whose bytes may be anything: the journal keeps invalid UTF-8 and NUL
// as their closest valid form (each run of bad bytes, and each NUL, a U+FFFD),
// the same in the row and in its record, so that the move is journaled
// (PostgreSQL's text refuses them) and the trail verifies (a record made the
// bytes valid where the row kept them raw).
func TestARecordOfAnyTextIsChainedExactly(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testARecordOfAnyTextIsChainedExactly)
}

func testARecordOfAnyTextIsChainedExactly(t *testing.T, name string) {
	c := newClock()
	j := open(t, name, c.Now)
	ctx := context.Background()
	for _, tc := range []struct{ raw, kept string }{
		{"plain", ""},
		{`<b>fish & chips</b> "quoted" \back\slash /slash`, ""},
		{"tab\tnewline\nreturn\rbell\afeed\fback\b", ""},
		{"line\u2028paragraph\u2029end", ""},
		{"привет 👋 世界 é", ""},
		{strings.Repeat("long ", 2000), ""},
		{"bad \xff\xfe bytes", "bad \uFFFD bytes"},
		{"a nul\x00byte", "a nul\uFFFDbyte"},
		{"cut rune \xe2\x82", "cut rune \uFFFD"},
	} {
		if tc.kept == "" {
			tc.kept = tc.raw
		}
		_, op := newOp(t, j)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified, Reason: tc.raw, Verdict: tc.raw}); err != nil {
			t.Fatalf("a move with the reason %.40q: %v", tc.raw, err)
		}
		ts, err := j.Transitions(ctx, op.ID)
		if err != nil || len(ts) != 2 || ts[1].Reason != tc.kept {
			t.Errorf("the reason %.40q reads back as %.200v, %v; want %.40q", tc.raw, ts, err, tc.kept)
		}
		if got, _ := j.Operation(ctx, op.ID); got.Verdict != tc.kept {
			t.Errorf("the verdict %.40q reads back as %.40q, want %.40q", tc.raw, got.Verdict, tc.kept)
		}
	}
	if rep := verify(t, j); rep.Fault != nil {
		t.Fatalf("trail: %s", rep.Fault)
	}
}
