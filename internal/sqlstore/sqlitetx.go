package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// sqliteTx is a write transaction on SQLite: BEGIN IMMEDIATE, its statements
// and COMMIT on one connection taken from the pool, rather than a *sql.Tx.
// database/sql starts a goroutine for every transaction it begins, to roll
// it back when its context ends, and one for every query inside it, and the
// driver one for every statement run under a context that can end: a send's
// four writes started about fifty, each woken and ended, for statements of
// microseconds. Once BEGIN has taken SQLite's lock, a write has nothing left
// to wait for that a context should cut short, so its statements run without
// their context's end (quiet), and it commits or rolls back whole.
type sqliteTx struct {
	conn  *sql.Conn
	quiet context.Context // the caller's context without its end
}

// beginSQLite begins a write transaction on a connection of pool. The caller
// holds the writer lock; the transaction takes SQLite's at once (IMMEDIATE),
// so that no statement of it waits to upgrade a read lock.
func beginSQLite(ctx context.Context, pool *sql.DB, d *Dialect) (*Tx, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	s := &sqliteTx{conn: conn, quiet: context.WithoutCancel(ctx)}
	// BEGIN alone runs under ctx: it is what may wait, in SQLite's busy
	// handler, for another process on the same file to finish its write.
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		s.release()
		return nil, err
	}
	return &Tx{s: s, d: d}, nil
}

func (s *sqliteTx) commit() error {
	_, err := s.conn.ExecContext(s.quiet, "COMMIT")
	if err != nil {
		return err // the caller rolls back, which releases the connection
	}
	s.release()
	return nil
}

func (s *sqliteTx) rollback() {
	s.conn.ExecContext(s.quiet, "ROLLBACK") // harmless where a failed COMMIT ended the transaction
	s.release()
}

// release gives the connection back to the pool, or closes it where it is
// still inside a transaction (a ROLLBACK that failed): the next write to take
// it would find its BEGIN refused, or worse, join the open transaction.
func (s *sqliteTx) release() {
	s.conn.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok && !c.AutoCommit() {
			return fmt.Errorf("sqlstore: a connection left inside a transaction: %w", driver.ErrBadConn)
		}
		return nil
	})
	s.conn.Close()
}
