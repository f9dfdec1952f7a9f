package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"runtime/metrics"
	"testing"
)

// goroutinesCreated is how many goroutines the process has started so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A write on SQLite under a context that can end (a bot's always can) starts
// no goroutine a statement: database/sql watched each transaction and each
// query in it, and the driver each statement, with one of their own, about
// fifty a send.
func TestAWriteStartsNoGoroutineAStatement(t *testing.T) {
	db := OpenSQLite(filepath.Join(t.TempDir(), "w.db"), SQLiteOptions{})
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := db.Exec(ctx, Durable, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	write := func(i int) error {
		return db.Write(ctx, Durable, func(tx *Tx) error {
			for k := range 3 {
				if _, err := tx.ExecContext(ctx, "INSERT INTO t(x) VALUES(?)", 10*i+k); err != nil {
					return err
				}
			}
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, "SELECT x FROM t WHERE x >= ?", 10*i)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		})
	}
	if err := write(0); err != nil { // the pool's connection opened
		t.Fatal(err)
	}
	const writes = 20
	before := goroutinesCreated()
	for i := 1; i <= writes; i++ {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	// BEGIN runs under ctx (it may wait for another process): one a write.
	// Five statements a write, watched, would be 140 at least.
	if got := goroutinesCreated() - before; got > writes+5 {
		t.Errorf("%d writes of five statements started %d goroutines, want at most %d", writes, got, writes+5)
	}
}

// A write's context that ends after the write began cuts no statement short:
// the write commits whole. One that has ended before it begins writes nothing.
func TestAWriteWhoseContextEndsCommitsWholeOrNotAtAll(t *testing.T) {
	db := OpenSQLite(filepath.Join(t.TempDir(), "w.db"), SQLiteOptions{})
	defer db.Close()
	if _, err := db.Exec(context.Background(), Durable, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := db.Write(ctx, Durable, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO t(x) VALUES(1)"); err != nil {
			return err
		}
		cancel()
		_, err := tx.ExecContext(ctx, "INSERT INTO t(x) VALUES(2)")
		return err
	})
	if err != nil {
		t.Fatalf("a write whose context ended inside it: %v, want it committed", err)
	}
	err = db.Write(ctx, Durable, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t(x) VALUES(3)")
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose context had ended: %v, want context.Canceled", err)
	}
	var sum int
	if err := db.QueryRowContext(context.Background(), "SELECT coalesce(sum(x), 0) FROM t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 3 {
		t.Errorf("rows sum to %d, want 3 (the first write whole, nothing of the second)", sum)
	}
}

// A connection that a write leaves inside its transaction (a ROLLBACK that
// failed) is closed, not given back to the pool: the next write there would
// find its BEGIN refused, or join what was left open.
func TestAConnectionLeftInsideATransactionIsNotReused(t *testing.T) {
	db := OpenSQLite(filepath.Join(t.TempDir(), "w.db"), SQLiteOptions{})
	defer db.Close()
	ctx := context.Background()
	if _, err := db.Exec(ctx, Durable, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	pool := db.Pool(Durable)
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO t(x) VALUES(1)"); err != nil {
		t.Fatal(err)
	}
	open := pool.Stats().OpenConnections
	(&sqliteTx{conn: conn, quiet: ctx}).release()
	if got := pool.Stats().OpenConnections; got != open-1 {
		t.Fatalf("open connections %d after releasing one inside a transaction, want %d (closed)", got, open-1)
	}
	if err := db.Write(ctx, Durable, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO t(x) VALUES(2)")
		return err
	}); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	var sum int
	if err := db.QueryRowContext(ctx, "SELECT sum(x) FROM t").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 2 {
		t.Errorf("rows sum to %d, want 2: the abandoned transaction's row is gone", sum)
	}
}

// A read on SQLite under a context that can end starts no goroutine of its
// own, and still stops at the next row once the context has ended.
func TestAReadStopsAtTheNextRowOnceItsContextEnds(t *testing.T) {
	db := OpenSQLite(filepath.Join(t.TempDir(), "r.db"), SQLiteOptions{})
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := db.Exec(ctx, Durable, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, Durable, "INSERT INTO t(x) VALUES (1), (2), (3)"); err != nil {
		t.Fatal(err)
	}
	read := func() (n int, err error) {
		rows, err := db.QueryContext(ctx, "SELECT x FROM t ORDER BY x")
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		for rows.Next() {
			if n++; n == 2 {
				cancel()
			}
		}
		return n, rows.Err()
	}
	before := goroutinesCreated()
	for range 20 {
		var x int
		if err := db.QueryRowContext(ctx, "SELECT x FROM t WHERE x = 2").Scan(&x); err != nil {
			t.Fatal(err)
		}
		rows, err := db.QueryContext(ctx, "SELECT x FROM t")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := goroutinesCreated() - before; got > 5 {
		t.Errorf("40 reads started %d goroutines, want none of their own", got)
	}
	n, err := read()
	if n != 2 || !errors.Is(err, context.Canceled) {
		t.Errorf("a read whose context ended at its second row: %d rows, %v; want 2 rows, context.Canceled", n, err)
	}
	if _, err := db.QueryContext(ctx, "SELECT x FROM t"); !errors.Is(err, context.Canceled) {
		t.Errorf("a read under an ended context: %v, want context.Canceled", err)
	}
	var x int
	if err := db.QueryRowContext(ctx, "SELECT x FROM t WHERE x = 2").Scan(&x); !errors.Is(err, context.Canceled) {
		t.Errorf("a one-row read under an ended context: %v, want context.Canceled", err)
	}
}
