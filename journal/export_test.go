package journal

import (
	"context"
	"os"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
)

// WithBusyTimeout replaces SQLite's busy timeout (5 s): with a tiny one, a write
// that meets another writer of this process inside SQLite fails at once with
// "database is locked" instead of waiting, so a test can tell that one bypassed
// the writer lock.
func WithBusyTimeout(d time.Duration) Option { return func(j *Journal) { j.busy = d } }

// WithoutWriterLock opens a journal whose writers do not queue on the writer
// lock and meet SQLite's busy handler instead, as they did before it: the
// baseline of BenchmarkConcurrentWriters.
func WithoutWriterLock() Option { return func(j *Journal) { j.writers = 1 << 30 } }

// WithoutAuditFlush opens a journal on PostgreSQL that never chains its
// pending audit records by itself: no flusher, no flush at Close, as a
// process that dies right after its commits. FlushAudit still flushes.
func WithoutAuditFlush() Option { return func(j *Journal) { j.noFlush = true } }

// WithFlushEvery replaces how often the flusher chains what is pending
// without a signal (a second).
func WithFlushEvery(d time.Duration) Option { return func(j *Journal) { j.flushEvery = d } }

// HoldWriterLock takes the writer lock of j's file, as a long write would, until
// release is called. On PostgreSQL, which has none, it locks the operations
// table against writes (not reads), in a transaction held open on a
// connection of its own, as a long migration would: a move waits for it.
func (j *Journal) HoldWriterLock(ctx context.Context) (release func(), err error) {
	if j.pg != nil {
		tx, err := j.db.Pool(durable).BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, "LOCK TABLE operations IN EXCLUSIVE MODE"); err != nil {
			tx.Rollback()
			return nil, err
		}
		return func() { tx.Rollback() }, nil
	}
	return j.db.LockWriter(ctx)
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
	return int64(lockOwn), int64(sqlstore.AdvisoryKey(j.pg.schema, transport))
}

// NameLock is the advisory lock (classid, objid) that joining as replica name
// takes on PostgreSQL, for a test that ends the replica's session from outside.
func (j *Journal) NameLock(name string) (int64, int64) {
	return int64(lockReplica), int64(sqlstore.AdvisoryKey(j.pg.schema, name))
}

// WriteLock is the advisory lock (key1, key2) a flush of the audit trail
// takes on PostgreSQL, for a test that holds it from another connection, as a
// flush of another process (or a write of an older binary) does.
func (j *Journal) WriteLock() (int64, int64) {
	return int64(lockAudit), int64(sqlstore.AdvisoryKey(j.pg.schema))
}

// MaxConns is the most connections a journal on PostgreSQL opens for its
// statements.
const MaxConns = sqlstore.MaxConns

// PoolBounds are the most connections each of the journal's pools may open
// (0: no bound), as database/sql reports them.
func (j *Journal) PoolBounds() (durable, lazy int) {
	return j.db.Pool(sqlstore.Durable).Stats().MaxOpenConnections, j.db.Pool(sqlstore.Lazy).Stats().MaxOpenConnections
}

// WithIdleInTransaction replaces how long the server keeps a session of this
// journal's pools that sits in a transaction with nothing asked
// (idleInTransaction): a short one lets a test see it ended.
func WithIdleInTransaction(d time.Duration) Option { return func(j *Journal) { j.idleInTx = d } }

// BeginAppend opens a write transaction on j's durable pool and takes the audit
// trail's lock in it, as every audited write does before it appends, and leaves
// it open until rollback is called: a process cut off from the database at that
// moment leaves the lock held by its session there.
func (j *Journal) BeginAppend(ctx context.Context) (rollback func(), err error) {
	tx, err := j.db.Pool(durable).BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := lockAuditTrail(ctx, tx, sqlstore.AdvisoryKey(j.pg.schema)); err != nil {
		tx.Rollback()
		return nil, err
	}
	return func() { tx.Rollback() }, nil
}

// VerifyWithoutFlush is VerifyAudit without its flush first: the trail as it
// stands, and the records still pending, read in one snapshot.
func (j *Journal) VerifyWithoutFlush(ctx context.Context) (AuditReport, error) {
	return j.verifySnapshot(ctx)
}

// RoundTrips counts the round trips the journal's write transactions made on
// PostgreSQL (0 on SQLite).
func (j *Journal) RoundTrips() int64 { return j.db.Trips() }

// LiveState is the condition of the operations_live index, for the test that
// holds it to the migrations.
const LiveState = liveState

// OperationsWhere is f's condition in the journal's dialect, with its
// arguments, for a test that reads the plan of a query by f.
func (j *Journal) OperationsWhere(f Filter) (string, []any) { return f.where(j.d) }
