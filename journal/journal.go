// Package journal is the operator's write-ahead log in SQLite, or PostgreSQL
// (postgres.go): tasks, operations,
// attempts, approvals and every state transition with its reason. A state is written
// before the action it describes, so a process that dies mid-commit comes back
// knowing that it cannot know, and never resends.
package journal

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/sqlstore"
)

// migrations holds each backend's migrations, in a folder of its own named
// for its dialect: migrations/sqlite, migrations/postgres.
//
//go:embed migrations
var migrations embed.FS

// Journal is an open journal. It is safe for concurrent use: on SQLite its
// writes queue on one lock shared by every Journal open on the file in this
// process (write.go), its reads do not wait.
type Journal struct {
	db        *sqlstore.DB // reads; every write goes through write (write.go)
	d         *sqlstore.Dialect
	writers   int // SQLite writers at once (sqlstore.SQLiteOptions); 0: one
	file      string
	now       func() time.Time
	leaseNow  func() time.Time // set by WithLeaseClock; nil: see leaseClock
	maxPages  int64
	busy      time.Duration // SQLite's busy timeout, for writers of other processes
	recovered []string
	migrated  []string                    // the migrations Open applied (Migrated)
	owned     []*os.File                  // the owner locks Own took, released by Close
	pg        *pgStore                    // nil on SQLite
	rep       *rep                        // set by Join: this journal is one of several replicas
	leads     leads                       // the leaderships Lead took
	auditOff  bool                        // WithoutAudit
	seenKey   func(action.Payload) string // WithSeenKey; nil: keys not known
	readOnly  bool                        // ReadOnlySnapshot
	head      head                        // SQLite: the last record this journal appended to the audit trail
	idleInTx  time.Duration               // the server's idle_in_transaction_session_timeout (idleInTransaction)
	// PostgreSQL: the flusher that chains pending audit records
	// (auditpending.go); noFlush and flushEvery are for tests.
	flush      *flusher
	noFlush    bool
	flushEvery time.Duration
	closed     bool
}

// Option configures Open.
type Option func(*Journal)

// WithClock replaces time.Now, for tests that need a frozen or moving clock.
func WithClock(now func() time.Time) Option { return func(j *Journal) { j.now = now } }

// WithLeaseClock replaces the clock that replicas' leases are written and
// compared by, for tests that move time past a lease. Without it a journal on
// PostgreSQL uses the database's clock, which every replica shares whatever
// its own host's clock says, and one on SQLite the journal's clock (its
// replicas share one host).
func WithLeaseClock(now func() time.Time) Option { return func(j *Journal) { j.leaseNow = now } }

// WithSeenKey has the journal keep key(payload) with each operation it
// creates or whose payload it replaces (verifier.SeenKey, through the
// operator), and find operations by it (Filter.SeenKey). Without it the
// journal keeps no key, and a filter by key matches every operation.
func WithSeenKey(key func(action.Payload) string) Option {
	return func(j *Journal) { j.seenKey = key }
}

// keyOf is p's seen key, or nil (NULL: not known) without WithSeenKey.
func (j *Journal) keyOf(p action.Payload) any {
	if j.seenKey == nil {
		return nil
	}
	return j.seenKey(p)
}

// WithoutAudit opens a journal that appends nothing to the audit trail, to
// measure what the trail costs (BenchmarkLifecycle): the facts it writes have no
// audit record, and VerifyAudit names the first of them. Never in production.
func WithoutAudit() Option { return func(j *Journal) { j.auditOff = true } }

// ReadOnlySnapshot opens a SQLite journal the process may only read (a copy
// on read-only media, a file of another user's that is readable but not
// writable, in a folder it cannot write): immutable, so that SQLite makes no
// write-ahead log or shared-memory file beside it, and every write fails. It
// is for commands that only read (countersign ops), and only for a journal no
// process is writing: a live journal changes under an immutable reader. One
// whose schema is older than this binary is refused: its migrations need a
// writer.
func ReadOnlySnapshot() Option { return func(j *Journal) { j.readOnly = true } }

// WithSizeLimit caps the journal file at about n bytes (never below its size when
// opened). SQLite only: a journal on PostgreSQL ignores it (the server's disk is the
// server's to watch). A write past the cap fails as it would on a full disk, with SQLite's
// "database or disk is full", and changes nothing: it is how a full disk is tested,
// and a guard for a journal that shares a small volume.
func WithSizeLimit(n int64) Option {
	return func(j *Journal) { j.maxPages = max(1, n/sqlstore.PageSize) }
}

// Open opens (creating if needed) the journal at path and applies pending
// migrations. A path that is a postgres:// or postgresql:// URL opens the journal
// in that PostgreSQL database (in the schema its search_path names), with the
// migrations of migrations/postgres; anything else is a SQLite file. It moves no
// operation: crash recovery is the job of the process that
// owns sending (Own), so a second process that only reads or resolves (countersign ops,
// countersign vault) can never take a live commit for a dead one.
func Open(ctx context.Context, file string, opts ...Option) (*Journal, error) {
	if IsPostgres(file) {
		j := &Journal{now: time.Now, d: sqlstore.Postgres}
		for _, o := range opts {
			o(j)
		}
		if err := j.openPostgres(ctx, file); err != nil {
			return nil, fmt.Errorf("journal: open %s: %w", Where(file), err)
		}
		return j, nil
	}
	j := &Journal{now: time.Now, file: file, busy: 5 * time.Second, d: sqlstore.SQLite}
	for _, o := range opts {
		o(j)
	}
	if j.readOnly {
		return j.openSnapshot(ctx)
	}
	if err := createPrivate(file); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", file, err)
	}
	// Foreign keys: attempts and transitions never outlive operations.
	j.db = sqlstore.OpenSQLite(file, sqlstore.SQLiteOptions{Busy: j.busy, MaxPages: j.maxPages, Writers: j.writers})
	if err := j.migrate(ctx); err != nil {
		j.db.Close()
		return nil, fmt.Errorf("journal: open %s: %w", file, err)
	}
	j.giveBackFreed(ctx)
	return j, nil
}

// giveBackFreed gives the file system back the pages the migrations just
// applied left free (0020 writes two tables again and drops indexes, about
// half of a large journal's pages): VACUUM, once, and only then. Left on the
// free list, they would be the journal's next writes' before the file grows,
// and a journal capped at its size (WithSizeLimit, a volume that is full)
// would take writes it is meant to refuse. A failure fails nothing: the pages
// stay free, and are used again.
func (j *Journal) giveBackFreed(ctx context.Context) {
	if len(j.migrated) == 0 {
		return
	}
	unlock, err := j.db.LockWriter(ctx) // a VACUUM writes, and is no transaction: it takes the lock itself
	if err != nil {
		return
	}
	defer unlock()
	var free int
	pool := j.db.Pool(durable)
	if err := pool.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err == nil && free > 0 {
		pool.ExecContext(ctx, "VACUUM")
	}
}

// openSnapshot opens j.file immutable and read-only (ReadOnlySnapshot).
func (j *Journal) openSnapshot(ctx context.Context) (*Journal, error) {
	if _, err := os.Stat(j.file); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", j.file, err)
	}
	j.db = sqlstore.OpenSQLite(j.file, sqlstore.SQLiteOptions{Snapshot: true})
	version, err := j.schemaVersion(ctx)
	if n := len(migrationFiles(j.d)); err == nil && version != n {
		err = fmt.Errorf("its schema is version %d, this binary's %d: open it once writable (countersign migrate) first", version, n)
	}
	if err != nil {
		j.db.Close()
		return nil, fmt.Errorf("journal: open %s read-only: %w", j.file, err)
	}
	return j, nil
}

// Close closes the database and releases the ownership Own took and its share of
// the writer lock. On PostgreSQL it first stops the flusher and chains, once
// more, the audit records still pending, its own writes' among them: a
// process that ends leaves none behind (one that dies does, for the others'
// flushes).
func (j *Journal) Close() error {
	j.stopFlusher()
	err := j.leave()
	if j.pg != nil && !j.noFlush && !j.closed {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = errors.Join(err, j.chainPending(ctx))
		cancel()
	}
	j.closed = true
	err = errors.Join(err, j.db.Close())
	if j.pg != nil {
		err = errors.Join(err, j.pg.close())
	}
	for _, f := range j.owned {
		f.Close() // closing the file releases its lock
	}
	j.owned = nil
	return err
}

// Commits returns how many write transactions the journal has committed since it
// was opened. Each one waits for the disk (an fsync of SQLite's write-ahead log,
// synchronous=FULL; on PostgreSQL, of its WAL with synchronous_commit on), so it is the figure that prices a send: a benchmark reports
// it per operation, and a test pins it so that no step gains a durable write of its
// own unnoticed.
func (j *Journal) Commits() int64 { return j.db.Commits() }

// Recovered returns the operations that Own moved from committing to unknown.
func (j *Journal) Recovered() []string { return slices.Clone(j.recovered) }

// migrate applies, in name order, each embedded migration newer than user_version,
// each in its own transaction.
func (j *Journal) migrate(ctx context.Context) error {
	names := migrationFiles(j.d)
	version, err := j.schemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > 0 && version < len(names) {
		if err := j.noSenderRunning(version, len(names)); err != nil {
			return err
		}
	}
	for i := version; i < len(names); i++ {
		src, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		err = j.tx(ctx, func(tx txn) error {
			// Read again under the write lock: another journal opened on the file
			// in the meantime may have applied it.
			var applied int
			if err := tx.QueryRowContext(ctx, j.d.SchemaVersion).Scan(&applied); err != nil || applied > i {
				return err
			}
			if _, err := tx.ExecContext(ctx, string(src)); err != nil {
				return err
			}
			if isAuditMigration(names[i]) {
				if err := writeGenesis(ctx, tx, time.Now().UTC()); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
				return err
			}
			j.migrated = append(j.migrated, migrationName(names[i]))
			return nil
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", path.Base(names[i]), err)
		}
	}
	if version > len(names) {
		return fmt.Errorf("schema version %d is newer than this binary knows (%d)", version, len(names))
	}
	return nil
}

// noSenderRunning refuses to migrate a journal (at schema version from, this
// binary's to) that a live process sends from: a migration holds the writer
// lock until it ends (0020 writes two tables again, then VACUUM gives the
// freed pages back, seconds on a large journal), and a bot of the older binary
// still running would see its writes fail at its busy timeout, in the middle
// of a send. The upgrade is: stop the bot, `countersign migrate`, start the new
// one. A sender is an owner of one of the journal's transports (Own), found by
// the lock files beside it.
func (j *Journal) noSenderRunning(from, to int) error {
	for _, transport := range j.ownedTransports() {
		pid, owned, err := j.Owner(transport)
		if err != nil || !owned {
			continue
		}
		who := "another process"
		if pid > 0 {
			who = fmt.Sprintf("process %d", pid)
		}
		return fmt.Errorf("schema version %d, this binary's %d, and %s sends %s operations from it: a migration would hold its writes until it ends; stop that process, then run `countersign migrate`: %w", from, to, who, transport, ErrOwned)
	}
	return nil
}

// ReasonCrashRecovery is the reason of the move from committing to unknown that the
// owner of sending makes on start for a commit a dead process left on the wire.
const ReasonCrashRecovery = "crash_recovery"

// recoverCommitting moves every operation of transport left in committing to
// unknown: the process that was sending it died, and nobody can know whether the
// request took effect.
func (j *Journal) recoverCommitting(ctx context.Context, transport string) error {
	ids, err := j.ids(ctx, "SELECT id FROM operations WHERE state = ? AND transport = ? AND "+liveState+" ORDER BY created_at, id", Committing, transport)
	if err != nil {
		return err
	}
	if err := j.recoverIDs(ctx, ids, ReasonCrashRecovery); err != nil {
		return fmt.Errorf("crash recovery: %w", err)
	}
	return nil
}

// ms and fromMS are how the store keeps times (sqlstore.Millis).
var ms, fromMS = sqlstore.Millis, sqlstore.FromMillis

const idAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// OperationIDPrefix begins every operation's id (NewID(operationPrefix)): a
// person's reference that begins with it names an operation, any other an
// approval, a task or a grant.
const OperationIDPrefix = operationPrefix + "-"

const operationPrefix = "op"

// IsOperationID reports whether ref is shaped as an operation's id: the
// prefix and something after it. Whether such an operation exists is the
// journal's to say.
func IsOperationID(ref string) bool {
	return strings.HasPrefix(ref, OperationIDPrefix) && len(ref) > len(OperationIDPrefix)
}

// NewID returns prefix-xxxxxx with six random characters chosen to be easy to type
// on a phone (no 0/o, 1/l/i).
func NewID(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	var sb strings.Builder
	sb.WriteString(prefix + "-")
	for _, c := range b {
		sb.WriteByte(idAlphabet[int(c)%len(idAlphabet)])
	}
	return sb.String()
}

// isUnique reports a clash of primary keys (random ids), isUniqueIndex one of
// another unique index (a task's origin).
func isUnique(err error) bool {
	if err == nil {
		return false // every write asks, and errors.As costs its targets
	}
	var se sqlite3.Error
	if code, constraint := pgCode(err); code == pgUniqueViolation {
		return strings.HasSuffix(constraint, "_pkey")
	}
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
}

func isUniqueIndex(err error) bool {
	if err == nil {
		return false
	}
	var se sqlite3.Error
	if code, constraint := pgCode(err); code == pgUniqueViolation {
		return !strings.HasSuffix(constraint, "_pkey")
	}
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique
}

// SQLSTATEs the journal tells apart.
const (
	pgUniqueViolation = "23505"
	pgDiskFull        = "53100"
)

// IsFull reports whether err is the disk (or the journal's size limit) running out
// of room, so that a surface can tell a person to free space rather than to read the
// log. The failed write changed nothing.
func IsFull(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return true
	}
	if code, _ := pgCode(err); code == pgDiskFull {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}
