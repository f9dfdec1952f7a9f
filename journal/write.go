package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// Every write the journal makes goes through write, which on SQLite holds the
// writer lock for the whole transaction (on PostgreSQL writes run side by side:
// writePG). SQLite lets one writer at a time into a database, and
// its busy handler makes the others retry in sleeps rather than queue: under a
// burst, a writer that keeps losing the race waits far longer than the work
// takes, and past the busy timeout its write fails ("database is locked") and the
// operation with it. Writers of this process therefore queue here, in order, and
// never meet the busy handler among themselves; the busy timeout is left for
// other processes on the same file (countersign ops, countersign vault resolve, countersign console beside
// a running bot). Reads take no lock: in WAL mode they never wait for the writer.
// TestWritersOfOneProcessQueue fails when a write skips the lock.

// commit says which pool a write goes through.
type commit int

const (
	durable commit = iota // synchronous=FULL: the commit waits for the disk
	lazy                  // synchronous=NORMAL: durable with the next durable commit
)

// writer is the journal's write side: its two pools are reached only through
// write, so that no write can skip the lock.
type writer struct {
	gate    *gate
	durable *sql.DB
	// lazy writes what needs no fsync of its own (synchronous=NORMAL; on
	// PostgreSQL, synchronous_commit off): a record
	// whose loss to a power cut is harmless, such as an update marked handled (a
	// replay of it is a no-op). It survives a crash of the process at once, and a
	// power cut from the next commit of durable on, which syncs the whole
	// write-ahead log, its frames included.
	lazy *sql.DB
}

// reader is the journal's read side: queries only, which never take the lock.
// Its statements are bound for the backend by its dialect.
type reader struct {
	db *sql.DB
	d  *dialect
}

func (r reader) QueryContext(ctx context.Context, query string, args ...any) (rows, error) {
	return r.db.QueryContext(ctx, r.d.bind(query), args...)
}

func (r reader) QueryRowContext(ctx context.Context, query string, args ...any) row {
	return r.db.QueryRowContext(ctx, r.d.bind(query), args...)
}

// txn is a write transaction; like reader, it binds its statements for the
// backend. A write of the journal's own on PostgreSQL is pipelined (p, see
// pgTx); the transactions of migrations and snapshots are plain (tx).
type txn struct {
	tx    *sql.Tx
	p     *pgTx
	d     *dialect
	chain *chain // the audit records of this transaction (audit.go)
}

func (t txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if t.p != nil {
		return t.p.exec(ctx, t.d.bind(query), args)
	}
	return t.tx.ExecContext(ctx, t.d.bind(query), args...)
}

func (t txn) QueryContext(ctx context.Context, query string, args ...any) (rows, error) {
	if t.p != nil {
		return t.p.query(ctx, t.d.bind(query), args)
	}
	return t.tx.QueryContext(ctx, t.d.bind(query), args...)
}

func (t txn) QueryRowContext(ctx context.Context, query string, args ...any) row {
	if t.p != nil {
		return t.p.queryRow(ctx, t.d.bind(query), args)
	}
	return t.tx.QueryRowContext(ctx, t.d.bind(query), args...)
}

// later runs a write whose result t does not read: at once on SQLite, and on
// PostgreSQL with t's next statement or its commit, in one round trip (pgTx).
// what names the write in the error of the statement it fails.
func (t txn) later(ctx context.Context, what, query string, args ...any) error {
	if t.p != nil {
		t.p.later(what, t.d.bind(query), args)
		return nil
	}
	if _, err := t.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (t txn) rollback() {
	if t.p != nil {
		t.p.rollback()
		return
	}
	t.tx.Rollback()
}

func (t txn) commit(ctx context.Context) error {
	if t.p != nil {
		return t.p.commit(ctx)
	}
	return t.tx.Commit()
}

// rowLock returns clause (" FOR UPDATE", " FOR SHARE", ...) where writers
// run side by side, and "" otherwise. A write transaction on PostgreSQL that
// reads a row to decide what to write locks it with the read, since other
// writers run beside it (writePG); on SQLite its writer is the only one, and
// the clause does not parse.
func (t txn) rowLock(clause string) string { return t.d.rowLock(clause) }

// lockOperation locks operation id's row until t ends, on PostgreSQL (see
// rowLock), before reads of its rows elsewhere that decide a write; an unknown id
// locks nothing and is left for the write to find.
func (t txn) lockOperation(ctx context.Context, id string) error {
	if !t.d.sideBySide {
		return nil
	}
	var one int
	err := t.QueryRowContext(ctx, "SELECT 1 FROM operations WHERE id = ? FOR UPDATE", id).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("lock operation %s: %w", id, err)
	}
	return nil
}

// write waits for the writer lock (or for ctx to end, returning its error), then
// runs fn in a write transaction on the pool c names and commits it when fn
// returns nil. On PostgreSQL there is no writer lock (writePG): its writes run
// side by side, each guarded by the rows it changes.
func (j *Journal) write(ctx context.Context, c commit, fn func(txn) error) error {
	if j.pg != nil {
		return j.writePG(ctx, c, fn)
	}
	if err := j.w.gate.lock(ctx); err != nil {
		return fmt.Errorf("wait to write: %w", err)
	}
	defer j.w.gate.unlock()
	pool := j.w.durable
	if c == lazy && j.w.lazy != nil {
		pool = j.w.lazy
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return j.run(ctx, txn{tx: tx, d: j.d, chain: &chain{off: j.auditOff, head: &j.head}}, fn)
}

// run runs fn in t, appends (or queues) the audit records fn made and commits.
func (j *Journal) run(ctx context.Context, t txn, fn func(txn) error) error {
	if err := fn(t); err != nil {
		t.rollback()
		return err
	}
	// The facts' audit records go in the facts' transaction: both or neither.
	if err := t.flushAudit(ctx); err != nil {
		t.rollback()
		return err
	}
	if err := t.commit(ctx); err != nil {
		t.rollback()
		j.head.set(0, "") // the records it appended are not there: read the head next time
		return err
	}
	return nil
}

// schemaVersion reads the schema version under the writer lock: the first
// connection to a new file turns it to WAL, a write that would otherwise meet
// another journal of this process opening the same file.
func (j *Journal) schemaVersion(ctx context.Context) (int, error) {
	if err := j.w.gate.lock(ctx); err != nil {
		return 0, fmt.Errorf("wait to write: %w", err)
	}
	defer j.w.gate.unlock()
	var version int
	err := j.w.durable.QueryRowContext(ctx, j.d.schemaVersion).Scan(&version)
	return version, err
}

// tx runs fn in a durable write transaction (see write).
func (j *Journal) tx(ctx context.Context, fn func(txn) error) error {
	return j.write(ctx, durable, fn)
}

// exec runs one statement as a write transaction of its own on the pool c names.
func (j *Journal) exec(ctx context.Context, c commit, query string, args ...any) (sql.Result, error) {
	if j.pg != nil {
		return j.execPG(ctx, c, query, args...)
	}
	var res sql.Result
	err := j.write(ctx, c, func(tx txn) error {
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// gate is the writer lock: a one-slot channel, so that a writer whose context
// ends stops waiting. Every Journal open on one file in this process shares its
// gate (gateFor), so two of them queue too.
type gate struct {
	slot chan struct{}
	key  string // its entry in gates; "" for a gate of its own
	refs int    // the open journals holding it, guarded by gates
}

func newGate(slots int) *gate { return &gate{slot: make(chan struct{}, slots)} }

func (g *gate) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case g.slot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) unlock() { <-g.slot }

// gates holds the gate of each journal file open in this process.
var gates = struct {
	sync.Mutex
	m map[string]*gate
}{m: map[string]*gate{}}

// gateFor returns the gate of file, shared by every journal open on it; release
// gives it back. SQLite's temporary and in-memory databases get one of their own.
func gateFor(file string) *gate {
	if file == "" || file == ":memory:" {
		return newGate(1)
	}
	key := file
	if abs, err := filepath.Abs(file); err == nil {
		key = abs
	}
	if resolved, err := filepath.EvalSymlinks(key); err == nil {
		key = resolved
	}
	return sharedGate(key)
}

// sharedGate returns the gate of key, shared by every journal open on it.
func sharedGate(key string) *gate {
	gates.Lock()
	defer gates.Unlock()
	g := gates.m[key]
	if g == nil {
		g = newGate(1)
		g.key = key
		gates.m[key] = g
	}
	g.refs++
	return g
}

func (g *gate) release() {
	if g == nil || g.key == "" { // nil: a journal on PostgreSQL has no gate
		return
	}
	gates.Lock()
	defer gates.Unlock()
	if g.refs--; g.refs == 0 {
		delete(gates.m, g.key)
	}
}
