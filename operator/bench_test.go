package operator_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// BenchmarkLifecycle is one send through the whole journaled lifecycle, prepare to
// committed, with an approval tap and an instant sender: about a dozen durable
// writes (task, operation, transitions, approval, attempt).
func BenchmarkLifecycle(b *testing.B) {
	pol := testPolicy(b)
	j, err := journal.Open(context.Background(), filepath.Join(b.TempDir(), "journal.db"))
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
	for i := 0; b.Loop(); i++ {
		task, err := op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		r, err := op.Call(ctx, task.ID, callSend("222", fmt.Sprintf("message %d", i)))
		if err != nil {
			b.Fatal(err)
		}
		a, err := op.PendingApproval(ctx, r.OperationID)
		if err != nil {
			b.Fatal(err)
		}
		if r, err = op.Decide(ctx, a.ID, approverID, true); err != nil || r.Status != tools.StatusSucceeded {
			b.Fatalf("Decide = %+v, %v", r, err)
		}
	}
}

// BenchmarkBareInsert is the baseline: one durable single-row insert in its own
// transaction, on a database opened with the journal's settings.
func BenchmarkBareInsert(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bare.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=5000&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Exec("INSERT INTO t(v) VALUES(?)", fmt.Sprintf("message %d", i)); err != nil {
			b.Fatal(err)
		}
	}
}

func mustRegistryB(b *testing.B, pol *policy.Policy) *tools.Registry {
	reg, err := tools.NewRegistry(pol, &scriptSender{})
	if err != nil {
		b.Fatal(err)
	}
	return reg
}
