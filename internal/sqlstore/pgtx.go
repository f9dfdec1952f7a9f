package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// A write transaction on PostgreSQL pays a round trip per statement, and the
// round trips, not the statements, are what a burst of sends spends its CPU on
// (both sides of the socket wake for each). A send's four transactions made 28
// of them. pgTx sends a transaction's statements in as few as it can, each
// batch pipelined (pgx.Batch, one sync):
//   - BEGIN goes with the first statement;
//   - a write whose result nobody reads (later: a transition, an attempt, an
//     audit record) waits and goes with the next statement, or with COMMIT.
//
// A queued write that fails fails the statement it went with, or the commit:
// the transaction is rolled back whole, as before, and its error names the
// write. Writes run in the order they were asked, queued or not.

// pgTx is a write transaction on one connection of a DB's pool.
type pgTx struct {
	conn   *pgx.Conn
	trips  *atomic.Int64 // counts each round trip
	begun  bool
	queued []laterWrite
	err    error // the first failure: the transaction can only be rolled back
}

// laterWrite is a statement queued by later; what names it in an error.
type laterWrite struct {
	what, query string
	args        []any
}

// runPG runs fn as a write transaction on a connection of pool, pipelined
// (pgTx). A connection left inside a transaction, which only a failed rollback
// leaves, is closed rather than given back.
func runPG(ctx context.Context, pool *sql.DB, trips *atomic.Int64, fn func(*pgTx) error) error {
	c, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var runErr error
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("sqlstore: a PostgreSQL connection of type %T", dc)
		}
		p := &pgTx{conn: sc.Conn(), trips: trips}
		runErr = fn(p)
		if p.conn.IsClosed() || p.conn.PgConn().TxStatus() != 'I' {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			p.conn.Close(ctx)        // bounded: the link may be the one gone silent
			return driver.ErrBadConn // database/sql drops it
		}
		return nil
	})
	if runErr != nil {
		return runErr
	}
	if errors.Is(err, driver.ErrBadConn) {
		return nil // fn succeeded; the connection was dropped after
	}
	return err
}

// later queues a write whose result the transaction does not read.
func (p *pgTx) later(what, query string, args []any) {
	p.queued = append(p.queued, laterWrite{what: what, query: query, args: args})
}

// send sends BEGIN (once), the queued writes and then query, in one round
// trip, and reads the results before query's; the caller reads query's and
// closes the batch.
func (p *pgTx) send(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	if p.err != nil {
		return nil, p.err
	}
	b := &pgx.Batch{}
	began := !p.begun
	if began {
		b.Queue("BEGIN")
		p.begun = true
	}
	queued := p.queued
	p.queued = nil
	for _, w := range queued {
		b.Queue(w.query, w.args...)
	}
	b.Queue(query, args...)
	p.trips.Add(1)
	br := p.conn.SendBatch(ctx, b)
	if began {
		if _, err := br.Exec(); err != nil {
			return nil, p.fail(br, fmt.Errorf("send statements: %w", err))
		}
	}
	for _, w := range queued {
		if _, err := br.Exec(); err != nil {
			return nil, p.fail(br, fmt.Errorf("%s: %w", w.what, err))
		}
	}
	return br, nil
}

// fail closes br and keeps err as the transaction's failure.
func (p *pgTx) fail(br pgx.BatchResults, err error) error {
	br.Close()
	p.err = err
	return err
}

func (p *pgTx) exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	br, err := p.send(ctx, query, args)
	if err != nil {
		return nil, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		p.err = err
		return nil, err
	}
	return pgResult(tag), nil
}

func (p *pgTx) query(ctx context.Context, query string, args []any) (Rows, error) {
	br, err := p.send(ctx, query, args)
	if err != nil {
		return nil, err
	}
	r, err := br.Query()
	if err != nil {
		return nil, p.fail(br, err)
	}
	return &pgRows{rows: r, p: p, br: br}, nil
}

func (p *pgTx) queryRow(ctx context.Context, query string, args []any) Row {
	r, err := p.query(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	return pgRow{r.(*pgRows)}
}

// commit sends the queued writes and COMMIT in one round trip. A transaction
// that asked nothing has nothing to commit.
func (p *pgTx) commit(ctx context.Context) error {
	if !p.begun && len(p.queued) == 0 {
		return p.err
	}
	br, err := p.send(ctx, "COMMIT", nil)
	if err != nil {
		return err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("commit ended as %q", tag.String()) // a failed transaction's COMMIT rolls back
	}
	if err != nil {
		p.err = err
	}
	return err
}

// rollback ends the transaction, dropping the writes not yet sent. A rollback
// that cannot be sent leaves the connection to be closed (runPG).
func (p *pgTx) rollback() {
	p.queued = nil
	if !p.begun || p.conn.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.trips.Add(1)
	p.conn.Exec(ctx, "ROLLBACK")
}

// Rows is what a query returns: *sql.Rows, or a pipelined transaction's rows
// on PostgreSQL.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is one row of a query: *sql.Row, or a pipelined transaction's.
type Row interface {
	Scan(dest ...any) error
}

type pgResult pgconn.CommandTag

func (r pgResult) LastInsertId() (int64, error) {
	return 0, errors.New("sqlstore: no insert id on PostgreSQL: use RETURNING")
}

func (r pgResult) RowsAffected() (int64, error) { return pgconn.CommandTag(r).RowsAffected(), nil }

// pgRows are a query's rows in a pipelined transaction: they end the batch
// they came in when read to the end or closed, and a failure fails the
// transaction.
type pgRows struct {
	rows   pgx.Rows
	p      *pgTx
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *pgRows) Next() bool {
	if r.closed {
		return false
	}
	if r.rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *pgRows) Scan(dest ...any) error { return r.rows.Scan(dest...) }

func (r *pgRows) Err() error { return r.err }

func (r *pgRows) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	r.rows.Close()
	r.err = r.rows.Err()
	if cerr := r.br.Close(); r.err == nil {
		r.err = cerr
	}
	if r.err != nil && r.p.err == nil {
		r.p.err = r.err
	}
	return r.err
}

type pgRow struct{ r *pgRows }

// Scan reads the first row, as *sql.Row does: sql.ErrNoRows when there is none.
func (w pgRow) Scan(dest ...any) error {
	if !w.r.Next() {
		if err := w.r.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	err := w.r.Scan(dest...)
	if cerr := w.r.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
