package operator_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// BenchmarkLifecycle is one send through the whole journaled lifecycle, prepare to
// committed, with an approval tap and an instant sender: a dozen rows (task,
// operation, six transitions, approval, attempt) in four durable transactions, the
// minimum the design needs (approval asked, approved, committing, committed). It
// reports them as fsyncs/op: each durable commit is one fsync of the WAL.
//
// It runs on both journals: sqlite (the default) and postgres (the local server,
// as the journal's tests reach it; skipped without one). Each also runs
// -unaudited, the same journal appending nothing to the audit trail, in the
// same run: the trail's price per send is the ratio of the two.
func BenchmarkLifecycle(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchmarkLifecycle(b, filepath.Join(b.TempDir(), "journal.db")) })
	b.Run("sqlite-unaudited", func(b *testing.B) {
		benchmarkLifecycle(b, filepath.Join(b.TempDir(), "journal.db"), journal.WithoutAudit())
	})
	b.Run("postgres", func(b *testing.B) { benchmarkLifecycle(b, pgtest.Fresh(b)) })
	b.Run("postgres-unaudited", func(b *testing.B) { benchmarkLifecycle(b, pgtest.Fresh(b), journal.WithoutAudit()) })
}

func benchmarkLifecycle(b *testing.B, name string, opts ...journal.Option) {
	pol := testPolicy(b)
	j, err := journal.Open(context.Background(), name, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	op, err := operator.New(operator.Options{Journal: j, Tools: mustRegistryB(b, pol), Policy: pol, Transport: "telegram"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	before := j.Commits()
	for i := 0; b.Loop(); i++ {
		_, r, err := op.Begin(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "bench"}, callSend("222", fmt.Sprintf("message %d", i)))
		if err != nil {
			b.Fatal(err)
		}
		a, err := op.PendingApproval(ctx, r.OperationID)
		if err != nil {
			b.Fatal(err)
		}
		if r, err = op.Decide(ctx, a.ID, approverID, true); err != nil || r.Status != action.StatusSucceeded {
			b.Fatalf("Decide = %+v, %v", r, err)
		}
	}
	b.ReportMetric(float64(j.Commits()-before)/float64(b.N), "fsyncs/op")
	b.StopTimer()
	if len(opts) == 0 {
		if rep, err := j.VerifyAudit(ctx); err != nil || rep.Fault != nil {
			b.Fatalf("the audit trail after the run: %v, %v", rep.Fault, err)
		}
	}
}

// BenchmarkBareInsert is the baseline: one durable single-row insert in its own
// transaction, on a database opened with the journal's settings.
func BenchmarkBareInsert(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bare.db")
	var commits atomic.Int64
	d := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterCommitHook(func() int { commits.Add(1); return 0 })
		return nil
	}}
	db := sql.OpenDB(bareConnector{d, "file:" + path + "?_journal_mode=WAL&_busy_timeout=5000&_synchronous=FULL&_txlock=immediate"})
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	before := commits.Load()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Exec("INSERT INTO t(v) VALUES(?)", fmt.Sprintf("message %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(commits.Load()-before)/float64(b.N), "fsyncs/op")
}

// bareConnector opens the baseline's connections through a driver that counts
// their commits, as the journal counts its own.
type bareConnector struct {
	d   *sqlite3.SQLiteDriver
	dsn string
}

func (c bareConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c bareConnector) Driver() driver.Driver                        { return c.d }

func mustRegistryB(b *testing.B, pol *policy.Policy) *tools.Registry {
	reg, err := tools.NewRegistry(pol, &scriptSender{})
	if err != nil {
		b.Fatal(err)
	}
	return reg
}
