package journal

import (
	"context"
	"os"
	"time"
)

// WithBusyTimeout replaces SQLite's busy timeout (5 s): with a tiny one, a write
// that meets another writer of this process inside SQLite fails at once with
// "database is locked" instead of waiting, so a test can tell that one bypassed
// the writer lock.
func WithBusyTimeout(d time.Duration) Option { return func(j *Journal) { j.busy = d } }

// WithoutWriterLock opens a journal whose writers do not queue on the writer
// lock and meet SQLite's busy handler instead, as they did before it: the
// baseline of BenchmarkConcurrentWriters.
func WithoutWriterLock() Option { return func(j *Journal) { j.w.gate = newGate(1 << 30) } }

// HoldWriterLock takes the writer lock of j's file, as a long write would, until
// release is called. On PostgreSQL, which has none, it takes the audit lock on a
// connection of its own, as an append about to commit holds it: an audited write
// waits for it.
func (j *Journal) HoldWriterLock(ctx context.Context) (release func(), err error) {
	if j.pg != nil {
		conn, err := j.w.durable.Conn(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1, $2)", lockAudit, lockKey(j.pg.schema)); err != nil {
			conn.Close()
			return nil, err
		}
		return func() {
			conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1, $2)", lockAudit, lockKey(j.pg.schema))
			conn.Close()
		}, nil
	}
	if err := j.w.gate.lock(ctx); err != nil {
		return nil, err
	}
	return j.w.gate.unlock, nil
}

// LookFor holds, for d, the lock Owner takes for an instant to look at
// transport's owner: a look stretched long enough for a test to start Own inside it.
// On PostgreSQL a look takes no lock (it reads pg_locks), so there is nothing to hold.
func (j *Journal) LookFor(transport string, d time.Duration) error {
	if j.pg != nil {
		return nil
	}
	f, err := os.Open(j.ownerFile(transport))
	if err != nil {
		return err
	}
	if err := lookLock(f); err != nil {
		f.Close()
		return err
	}
	time.AfterFunc(d, func() { f.Close() })
	return nil
}

// LeadLock is the advisory lock (classid, objid) that leading transport takes on
// PostgreSQL, for a test that ends the leader's session from outside.
func (j *Journal) LeadLock(transport string) (int64, int64) {
	return int64(lockOwn), int64(lockKey(j.pg.schema, transport))
}

// NameLock is the advisory lock (classid, objid) that joining as replica name
// takes on PostgreSQL, for a test that ends the replica's session from outside.
func (j *Journal) NameLock(name string) (int64, int64) {
	return int64(lockReplica), int64(lockKey(j.pg.schema, name))
}

// WriteLock is the advisory lock (key1, key2) every audited write transaction
// takes on PostgreSQL before its append, for a test that holds it from another
// connection, as an append of another process (or a whole write of an older
// binary) does.
func (j *Journal) WriteLock() (int64, int64) {
	return int64(lockAudit), int64(lockKey(j.pg.schema))
}

// MaxConns is the most connections a journal on PostgreSQL opens for its
// statements.
const MaxConns = maxDurableConns + maxLazyConns

// WithIdleInTransaction replaces how long the server keeps a session of this
// journal's pools that sits in a transaction with nothing asked
// (idleInTransaction): a short one lets a test see it ended.
func WithIdleInTransaction(d time.Duration) Option { return func(j *Journal) { j.idleInTx = d } }

// BeginAppend opens a write transaction on j's durable pool and takes the audit
// trail's lock in it, as every audited write does before it appends, and leaves
// it open until rollback is called: a process cut off from the database at that
// moment leaves the lock held by its session there.
func (j *Journal) BeginAppend(ctx context.Context) (rollback func(), err error) {
	tx, err := j.w.durable.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := lockAuditTrail(ctx, tx, lockKey(j.pg.schema), false); err != nil {
		tx.Rollback()
		return nil, err
	}
	return func() { tx.Rollback() }, nil
}
