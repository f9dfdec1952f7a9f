package journal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/pgtest"
)

// openPG opens a fresh journal on PostgreSQL, closed when t ends.
func openPG(t *testing.T) *Journal {
	t.Helper()
	j, err := Open(context.Background(), pgtest.Fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// A pipelined transaction whose queued write fails is rolled back whole,
// the statements it had already sent included, and says which write failed;
// the connection it ran on goes back to the pool clean, and the next
// transaction on it commits.
func TestAFailedQueuedWriteRollsBackItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := openPG(t)
	j.db.Pool(durable).SetMaxOpenConns(1) // the next write gets the same connection
	insert := `INSERT INTO inbox(key, update_id, body, received_at) VALUES(?, ?, '{}', 0)`
	if err := j.tx(ctx, func(tx txn) error {
		_, err := tx.ExecContext(ctx, insert, "a", 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := j.tx(ctx, func(tx txn) error {
		if _, err := tx.ExecContext(ctx, insert, "b", 2); err != nil { // sent at once
			return err
		}
		tx.Later(ctx, "store a again", insert, "a", 1) // a duplicate key: fails at the commit
		return tx.Later(ctx, "store c", insert, "c", 3)
	})
	if err == nil || !strings.Contains(err.Error(), "store a again") || !isUnique(err) {
		t.Fatalf("commit = %v, want the duplicate's error, naming its write", err)
	}
	var keys []string
	rows, err := j.db.QueryContext(ctx, "SELECT key FROM inbox ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys = append(keys, k)
	}
	rows.Close()
	if strings.Join(keys, ",") != "a" {
		t.Errorf("inbox holds %v after the failed transaction, want only a", keys)
	}
	if err := j.tx(ctx, func(tx txn) error { return tx.Later(ctx, "store d", insert, "d", 4) }); err != nil {
		t.Errorf("the next transaction: %v", err)
	}
}

// A statement sent after a queued write failed fails with it, and the caller's
// error is the write's, not a later one's.
func TestAStatementAfterAFailedQueuedWriteFailsWithIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j := openPG(t)
	insert := `INSERT INTO inbox(key, update_id, body, received_at) VALUES(?, ?, '{}', 0)`
	if _, err := j.exec(ctx, durable, insert, "a", 1); err != nil {
		t.Fatal(err)
	}
	var first, second error
	err := j.tx(ctx, func(tx txn) error {
		tx.Later(ctx, "store a again", insert, "a", 1)
		_, first = tx.ExecContext(ctx, "SELECT 1")
		_, second = tx.ExecContext(ctx, "SELECT 2")
		return first
	})
	if err == nil || !strings.Contains(err.Error(), "store a again") {
		t.Fatalf("tx = %v, want the queued write's error", err)
	}
	if !errors.Is(second, first) {
		t.Errorf("the next statement failed with %v, want the first failure %v", second, first)
	}
}
