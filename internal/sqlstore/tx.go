package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// Tx is a write transaction, whose statements, written with ? placeholders,
// it binds for its backend. A write of DB.Write on PostgreSQL is pipelined
// (pgTx), on SQLite it runs on a connection of its own (sqliteTx); a
// transaction begun on a pool directly (a migration, a snapshot) is plain
// (Plain).
type Tx struct {
	tx *sql.Tx
	s  *sqliteTx
	p  *pgTx
	d  *Dialect
}

// querier is what runs a Tx's statements (on): a *sql.Tx, or the *sql.Conn of
// a write on SQLite.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Plain is tx, a transaction begun on one of a DB's pools (Pool), as a Tx
// that binds its statements in d's words.
func Plain(tx *sql.Tx, d *Dialect) *Tx { return &Tx{tx: tx, d: d} }

// Dialect is the words of t's backend.
func (t *Tx) Dialect() *Dialect { return t.d }

// ExecContext runs a statement in t and returns its result.
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t.p != nil {
		return t.p.exec(ctx, t.d.Bind(query), args)
	}
	return t.on().ExecContext(t.stmtContext(ctx), t.d.Bind(query), args...)
}

// QueryContext runs a query in t; its rows must be closed (read to the end
// or Close) before t's next statement.
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	if t.p != nil {
		return t.p.query(ctx, t.d.Bind(query), args)
	}
	return t.on().QueryContext(t.stmtContext(ctx), t.d.Bind(query), args...)
}

// QueryRowContext runs a query in t for one row (sql.ErrNoRows at Scan when
// there is none).
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) Row {
	if t.p != nil {
		return t.p.queryRow(ctx, t.d.Bind(query), args)
	}
	return t.on().QueryRowContext(t.stmtContext(ctx), t.d.Bind(query), args...)
}

// Later runs a write whose result t does not read: at once on SQLite, and on
// PostgreSQL with t's next statement or its commit, in one round trip (pgTx).
// what names the write in the error of the statement it fails.
func (t *Tx) Later(ctx context.Context, what, query string, args ...any) error {
	if t.p != nil {
		t.p.later(what, t.d.Bind(query), args)
		return nil
	}
	if _, err := t.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RowLock returns clause (" FOR UPDATE", " FOR SHARE", ...) where writers run
// side by side, and "" otherwise (Dialect.RowLock). A write transaction on
// PostgreSQL that reads a row to decide what to write locks it with the read,
// since other writers run beside it; on SQLite its writer is the only one, and
// the clause does not parse.
func (t *Tx) RowLock(clause string) string { return t.d.RowLock(clause) }

// on is what runs t's statements, on SQLite and in a plain transaction.
func (t *Tx) on() querier {
	if t.s != nil {
		return t.s.conn
	}
	return t.tx
}

// stmtContext is the context a statement of t runs under: on SQLite, ctx
// without its end (sqliteTx says why).
func (t *Tx) stmtContext(ctx context.Context) context.Context {
	if t.s != nil {
		return t.s.quiet
	}
	return ctx
}

func (t *Tx) rollback() {
	switch {
	case t.p != nil:
		t.p.rollback()
	case t.s != nil:
		t.s.rollback()
	default:
		t.tx.Rollback()
	}
}

func (t *Tx) commit(ctx context.Context) error {
	switch {
	case t.p != nil:
		return t.p.commit(ctx)
	case t.s != nil:
		return t.s.commit()
	}
	return t.tx.Commit()
}
