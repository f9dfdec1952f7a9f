package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/internal/sqlstore"
)

// Every write the journal makes goes through write, on its store
// (internal/sqlstore): on SQLite the writers of this process queue on one
// writer lock, shared by every Journal open on the file, and never meet
// SQLite's busy handler among themselves; on PostgreSQL they run side by
// side, each guarded by the rows it changes. Reads take no lock.
// TestWritersOfOneProcessQueue fails when a write skips the lock.

// commit says which pool a write goes through (sqlstore.Durable, Lazy).
type commit = sqlstore.Commit

const (
	durable = sqlstore.Durable // the commit waits for the disk
	lazy    = sqlstore.Lazy    // durable with the next durable commit
)

// txn is a write transaction of the journal: the store's, with the audit
// records of the facts it writes (audit.go).
type txn struct {
	*sqlstore.Tx
	chain *chain
}

// lockOperation locks operation id's row until t ends, where writers run side
// by side (RowLock), before reads of its rows elsewhere that decide a write;
// an unknown id locks nothing and is left for the write to find.
func (t txn) lockOperation(ctx context.Context, id string) error {
	if !t.Dialect().SideBySide {
		return nil
	}
	var one int
	err := t.QueryRowContext(ctx, "SELECT 1 FROM operations WHERE id = ? FOR UPDATE", id).Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("lock operation %s: %w", id, err)
	}
	return nil
}

// write runs fn in a write transaction on the pool c names (sqlstore.DB.Write)
// and commits it, with the audit records fn made, when fn returns nil. The
// facts' audit records go in the facts' transaction: both or neither. On
// SQLite they are chained there; on PostgreSQL they are queued, and once the
// write has committed its journal's flusher is signalled to chain them
// (auditpending.go).
func (j *Journal) write(ctx context.Context, c commit, fn func(txn) error) error {
	ch := &chain{off: j.auditOff, queue: j.pg != nil}
	if j.pg == nil {
		ch.head = &j.head
	}
	err := j.db.Write(ctx, c, func(tx *sqlstore.Tx) error {
		t := txn{Tx: tx, chain: ch}
		if err := fn(t); err != nil {
			return err
		}
		return t.flushAudit(ctx)
	})
	if err != nil {
		j.head.set(0, "") // records it appended are not there: read the head next time
		return err
	}
	if ch.queued {
		j.flush.signal()
	}
	return nil
}

// tx runs fn in a durable write transaction (see write).
func (j *Journal) tx(ctx context.Context, fn func(txn) error) error {
	return j.write(ctx, durable, fn)
}

// exec runs one statement as a write transaction of its own on the pool c names.
func (j *Journal) exec(ctx context.Context, c commit, query string, args ...any) (sql.Result, error) {
	return j.db.Exec(ctx, c, query, args...)
}

// schemaVersion reads the schema version under the writer lock: the first
// connection to a new file turns it to WAL, a write that would otherwise meet
// another journal of this process opening the same file.
func (j *Journal) schemaVersion(ctx context.Context) (int, error) {
	unlock, err := j.db.LockWriter(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var version int
	err = j.db.QueryRowContext(ctx, j.d.SchemaVersion).Scan(&version)
	return version, err
}
