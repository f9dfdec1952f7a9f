package operator_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

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
	// The trail's price again, paired: each iteration one send on the journal
	// with the trail and one on the journal without it, in turn (which goes
	// first alternates), so that a machine whose load drifts during the run
	// weighs on both alike. chain-x is the ratio of their times.
	b.Run("sqlite-chain-paired", func(b *testing.B) {
		benchmarkChainPaired(b, filepath.Join(b.TempDir(), "audited.db"), filepath.Join(b.TempDir(), "unaudited.db"))
	})
	b.Run("postgres-chain-paired", func(b *testing.B) { benchmarkChainPaired(b, pgtest.Fresh(b), pgtest.Fresh(b)) })
}

// benchmarkChainPaired is BenchmarkLifecycle's send on two journals in turn,
// audited at the name audited, unaudited at the name unaudited; it reports
// each one's time per send (audited-ms, unaudited-ms) and their ratio
// (chain-x).
func benchmarkChainPaired(b *testing.B, audited, unaudited string) {
	pol := testPolicy(b)
	ctx := b.Context() // as a bot's: one that can end
	var ops [2]*operator.Operator
	for i, o := range []struct {
		name string
		opts []journal.Option
	}{{audited, nil}, {unaudited, []journal.Option{journal.WithoutAudit()}}} {
		j, err := journal.Open(ctx, o.name, append(o.opts, journal.WithSeenKey(operator.SeenKey))...)
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		if ops[i], err = operator.New(operator.Options{Journal: j, Tools: mustRegistryB(b, pol), Policy: pol, Transport: "telegram"}); err != nil {
			b.Fatal(err)
		}
	}
	var took [2]time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range 2 {
			which := (i + k) % 2
			start := time.Now()
			lifecycleSend(b, ops[which], i)
			took[which] += time.Since(start)
		}
	}
	b.ReportMetric(ms(took[0])/float64(b.N), "audited-ms")
	b.ReportMetric(ms(took[1])/float64(b.N), "unaudited-ms")
	b.ReportMetric(float64(took[0])/float64(took[1]), "chain-x")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchmarkLifecycle(b *testing.B, name string, opts ...journal.Option) {
	pol := testPolicy(b)
	j, err := journal.Open(context.Background(), name, append(opts, journal.WithSeenKey(operator.SeenKey))...)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	op, err := operator.New(operator.Options{Journal: j, Tools: mustRegistryB(b, pol), Policy: pol, Transport: "telegram"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context() // as a bot's: one that can end
	b.ReportAllocs()
	b.ResetTimer()
	before := j.Commits()
	for i := 0; b.Loop(); i++ {
		lifecycleSend(b, op, i)
	}
	b.ReportMetric(float64(j.Commits()-before)/float64(b.N), "fsyncs/op")
	b.StopTimer()
	if len(opts) == 0 {
		if rep, err := j.VerifyAudit(ctx); err != nil || rep.Fault != nil {
			b.Fatalf("the audit trail after the run: %v, %v", rep.Fault, err)
		}
	}
}

// lifecycleSend is one send of BenchmarkLifecycle: asked, approved, sent.
func lifecycleSend(b *testing.B, op *operator.Operator, i int) {
	ctx := b.Context() // as a bot's: one that can end
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
