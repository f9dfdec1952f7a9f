package journal_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// TestLiveStateIsTheIndexCondition holds the condition the journal's queries
// add for the operations_live index to the index itself, on both backends (a
// planner uses a partial index only for a query that carries its condition),
// and to Final: the index leaves out exactly the final states.
func TestLiveStateIsTheIndexCondition(t *testing.T) {
	t.Parallel()
	found := 0
	err := filepath.WalkDir("migrations", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sql := strings.Join(strings.Fields(string(b)), " ")
		if !strings.Contains(sql, "CREATE INDEX operations_live") {
			return nil
		}
		found++
		if !strings.Contains(sql, "WHERE "+journal.LiveState+";") {
			t.Errorf("%s: operations_live's condition is not %q", path, journal.LiveState)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found != 2 {
		t.Fatalf("operations_live is created by %d migrations, want one a backend", found)
	}
	var out []journal.State
	for _, m := range regexp.MustCompile(`'([a-z_]+)'`).FindAllStringSubmatch(journal.LiveState, -1) {
		out = append(out, journal.State(m[1]))
	}
	for _, s := range journal.States() {
		if s.Final() != slices.Contains(out, s) {
			t.Errorf("%s: final %v, but left out of operations_live %v", s, s.Final(), slices.Contains(out, s))
		}
	}
}

// TestQueriesByWhereThingsStandUseTheirIndexes reads the plans of the queries
// that find operations in play and open approvals, and of the one that finds
// the card a reply answers: each must be served by its
// partial index (or one of two: an empty table gives the planner no reason to
// choose), also in PostgreSQL's generic plan, made once for any argument
// (where "state = $1" alone could not be known to imply the index's
// condition).
func TestQueriesByWhereThingsStandUseTheirIndexes(t *testing.T) {
	t.Parallel()
	type query struct {
		sql   string
		args  []any
		index string // the index, or the start of the names of those that may serve it
	}
	queries := func(j *journal.Journal) []query {
		var qs []query
		for _, c := range []struct {
			f     journal.Filter
			index string
		}{
			{journal.Filter{States: []journal.State{journal.AwaitingApproval}, Transport: "telegram"}, "operations_live"},
			{journal.Filter{States: []journal.State{journal.Approved, journal.RetryWait, journal.Unknown}}, "operations_live"},
			{journal.Filter{States: []journal.State{journal.Committed}, Transport: "telegram", WithEnvelope: true}, "operations_noted"},
			// What the verifier reads before each send: the chat's rejections
			// of the last while.
			{journal.Filter{States: []journal.State{journal.Rejected}, Chat: "1", ChangedSince: time.Unix(1, 0)}, "operations_rejected"},
		} {
			where, args := j.OperationsWhere(c.f)
			qs = append(qs, query{"SELECT id FROM operations WHERE " + where, args, c.index})
		}
		return append(qs,
			query{"SELECT id FROM approvals WHERE decision = '' AND expires_at <= ?", []any{int64(1)}, "approvals_open"},
			query{"SELECT id FROM approvals WHERE decision = '' AND created_at >= ?", []any{int64(1)}, "approvals_open"},
			// The card a reply answers (CardAt).
			query{"SELECT ref FROM cards WHERE chat_id = ? AND message_id = ?", []any{int64(1), int64(2)}, "cards_message"})
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		name := filepath.Join(t.TempDir(), "j.db")
		j := open(t, name, nil)
		db := raw(t, name)
		for _, q := range queries(j) {
			var plan []string
			rows, err := db.Query("EXPLAIN QUERY PLAN "+q.sql, q.args...)
			if err != nil {
				t.Fatalf("%s: %v", q.sql, err)
			}
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			if !strings.Contains(strings.Join(plan, "; "), "INDEX "+q.index) {
				t.Errorf("%s\nplan %q, want it served by %s", q.sql, plan, q.index)
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN ") {
					t.Errorf("%s\nplan %q reads a table whole", q.sql, plan)
				}
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		name := pgtest.Fresh(t)
		j := open(t, name, nil)
		ctx := context.Background()
		conn, err := raw(t, name).Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A generic plan, and no table scan where an index can serve.
		for _, s := range []string{"SET plan_cache_mode = force_generic_plan", "SET enable_seqscan = off"} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		for i, q := range queries(j) {
			n := 0
			sql := regexp.MustCompile(`\?`).ReplaceAllStringFunc(q.sql, func(string) string { n++; return fmt.Sprintf("$%d", n) })
			if _, err := conn.ExecContext(ctx, fmt.Sprintf("PREPARE q%d AS %s", i, sql)); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			var lits []string
			for _, a := range q.args {
				switch a := a.(type) {
				case int64:
					lits = append(lits, fmt.Sprint(a))
				default:
					lits = append(lits, fmt.Sprintf("'%s'", a))
				}
			}
			rows, err := conn.QueryContext(ctx, fmt.Sprintf("EXPLAIN EXECUTE q%d(%s)", i, strings.Join(lits, ", ")))
			if err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, strings.TrimSpace(line))
			}
			rows.Close()
			if p := strings.Join(plan, "; "); !strings.Contains(p, q.index) || strings.Contains(p, "Seq Scan") {
				t.Errorf("%s\nplan %q, want it served by %s, no table read whole", sql, plan, q.index)
			}
		}
	})
}

// TestMigrationsLeaveNoPageFree: the pages the migrations free (0020 writes
// two tables again) go back to the file system, so that a journal capped at
// its size refuses the writes a full disk would (a free page would take them).
func TestMigrationsLeaveNoPageFree(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "j.db")
	open(t, name, nil).Close()
	var free int
	if err := raw(t, name).QueryRow("PRAGMA freelist_count").Scan(&free); err != nil {
		t.Fatal(err)
	}
	if free != 0 {
		t.Errorf("%d pages free after the migrations, want none", free)
	}
}
