package journal_test

import (
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// TestEveryTamperOfAPasskeyVoteIsFoundAndNamed: verify compares a vote given
// with a passkey, and its receipt, with their records, and names the first
// that differs: the factor the journal says the vote was given with, the
// payload hash its record says the passkey was given for, and a receipt the
// journal keeps whose record is gone. The last two are the trail rewritten
// by someone with write access to the database who chains it again, so that
// it checks in place and only its facts can tell.
func TestEveryTamperOfAPasskeyVoteIsFoundAndNamed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testEveryTamperOfAPasskeyVoteIsFoundAndNamed)
}

func testEveryTamperOfAPasskeyVoteIsFoundAndNamed(t *testing.T, name string) {
	other := strings.Repeat("ab", 32)
	voteSeq := "SELECT seq FROM audit WHERE kind = 'vote'"
	tests := []struct {
		name   string
		tamper func(t *testing.T, db *sql.DB, name string, a *journal.Approval)
		at     string // a query of the seq the fault names; "" for a fact without a record
		kind   string
		want   func(a *journal.Approval) string
	}{
		{"the vote passed off as a tap", execTamper("UPDATE approval_votes SET step_up = ''"), voteSeq, audit.Vote,
			func(a *journal.Approval) string {
				return "the vote of 42 on " + a.ID + ` in the journal was given with ""; the record says "passkey"`
			}},
		{"the vote passed off as a TOTP code", execTamper("UPDATE approval_votes SET step_up = 'totp'"), voteSeq, audit.Vote,
			func(a *journal.Approval) string {
				return "the vote of 42 on " + a.ID + ` in the journal was given with "totp"; the record says "passkey"`
			}},
		{"the vote's record of another payload, the trail chained again",
			func(t *testing.T, db *sql.DB, name string, _ *journal.Approval) {
				rewriteTrail(t, db, name, func(r *audit.Record) bool {
					if r.Kind == audit.Vote {
						var f audit.VoteFact
						if err := json.Unmarshal(r.Body, &f); err != nil {
							t.Fatal(err)
						}
						f.PayloadSHA256 = other
						r.Body, _ = json.Marshal(f)
					}
					return true
				})
			}, voteSeq, audit.Vote,
			func(a *journal.Approval) string {
				return "the vote of 42 on " + a.ID + " was given with passkey for payload " + other + "; the approval is of " + a.PayloadSHA256
			}},
		{"the receipt's record removed, the trail chained again",
			func(t *testing.T, db *sql.DB, name string, _ *journal.Approval) {
				rewriteTrail(t, db, name, func(r *audit.Record) bool { return r.Kind != audit.Receipt })
			}, "", audit.Receipt,
			func(a *journal.Approval) string {
				return "the passkey receipt of 42 on " + a.ID + " has no audit record"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fresh := t.TempDir() + "/j.db"
			if journal.IsPostgres(name) {
				fresh = pgtest.Fresh(t)
			}
			j := open(t, fresh, newClock().Now)
			_, a, _ := approvedWithPasskey(t, j)
			if rep := verify(t, j); rep.Fault != nil { // and the records chained, to be tampered with
				t.Fatalf("before the tamper: %s", rep.Fault)
			}
			db := raw(t, fresh)
			unprotect(t, db, fresh)
			tt.tamper(t, db, fresh, a)
			var at int64
			if tt.at != "" {
				if err := db.QueryRow(tt.at).Scan(&at); err != nil {
					t.Fatalf("%s: %v", tt.at, err)
				}
			}
			f, want := verify(t, j).Fault, tt.want(a)
			switch {
			case f == nil:
				t.Fatalf("not found; want %q", want)
			case f.Seq != at || f.Kind != tt.kind || !strings.Contains(f.Problem, want):
				t.Errorf("fault = %s (seq %d, kind %s); want seq %d, kind %s, %q", f, f.Seq, f.Kind, at, tt.kind, want)
			}
		})
	}
}

// execTamper is a tamper that runs one statement.
func execTamper(stmt string) func(t *testing.T, db *sql.DB, name string, a *journal.Approval) {
	return func(t *testing.T, db *sql.DB, _ string, _ *journal.Approval) {
		t.Helper()
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// rewriteTrail rewrites the journal's trail (its triggers dropped) as
// someone with write access to the database who knows the format can: keep
// reports whether each record stays, after changing it if it likes, and the
// records kept are numbered and chained again from the first, so that the
// trail checks in place.
func rewriteTrail(t *testing.T, db *sql.DB, name string, keep func(*audit.Record) bool) {
	t.Helper()
	rows, err := db.Query("SELECT seq, at, kind, operation_id, ref, body FROM audit ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for rows.Next() {
		var r audit.Record
		var body string
		if err := rows.Scan(&r.Seq, &r.At, &r.Kind, &r.Operation, &r.Ref, &body); err != nil {
			t.Fatal(err)
		}
		r.Body = json.RawMessage(body)
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if _, err := db.Exec("DELETE FROM audit"); err != nil {
		t.Fatal(err)
	}
	insert := "INSERT INTO audit(seq, at, kind, operation_id, ref, body, prev_hash, hash) VALUES(?, ?, ?, ?, ?, ?, ?, ?)"
	if journal.IsPostgres(name) {
		for i := 1; strings.Contains(insert, "?"); i++ {
			insert = strings.Replace(insert, "?", "$"+strconv.Itoa(i), 1)
		}
	}
	seq, prev := int64(1), audit.ZeroHash
	for _, r := range recs {
		if !keep(&r) {
			continue
		}
		r.Seq, r.PrevHash = seq, prev
		r.Hash = r.Sum()
		if _, err := db.Exec(insert, r.Seq, r.At, r.Kind, r.Operation, r.Ref, string(r.Body), r.PrevHash, r.Hash); err != nil {
			t.Fatal(err)
		}
		seq, prev = seq+1, r.Hash
	}
}
