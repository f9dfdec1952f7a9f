package journal

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/countersign/countersign/internal/sqlstore"
)

// The journal on PostgreSQL is the same code as on SQLite, its SQL in
// PostgreSQL's words (sqlstore.Postgres, dialect.go) and its locks taken as PostgreSQL's. SQLite has one writer
// at a time; PostgreSQL's writes run side by side (sqlstore.DB.Write), each guarded by the
// rows it changes; a write queues its audit records, and a flush chains them
// under a transaction-level advisory lock (lockAudit, auditpending.go). A
// session-level advisory lock, held on a connection of its own, stands for the
// owner's flock.

// IsPostgres reports whether name is a PostgreSQL URL (postgres:// or
// postgresql://), which Open opens on PostgreSQL; anything else is a SQLite file.
func IsPostgres(name string) bool {
	return strings.HasPrefix(name, "postgres://") || strings.HasPrefix(name, "postgresql://")
}

// Where names the PostgreSQL database of url as host/database, for logs and
// messages: the URL itself may carry a password and is never shown.
func Where(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "postgres (unparsable URL)"
	}
	return cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
}

// pgStore is what a journal on PostgreSQL keeps beside the pool.
type pgStore struct {
	config *pgx.ConnConfig
	where  string // host:port/database, never the URL
	schema string // the current_schema() of the pool's connections
	owners []*pgx.Conn
}

// The advisory locks' first key: one per purpose. Their second key is a hash of
// the schema (and of the transport for ownership), so that journals in two
// schemas of one database never wait for each other.
//
// lockAudit's first key is the one every append has taken, for its whole
// write before writes ran side by side and then for its append: a flush
// takes it too, so that no two chain onto the same record.
const (
	lockAudit   int32 = 0x43530001
	lockMigrate int32 = 0x43530002
	lockOwn     int32 = 0x43530003
	lockReplica int32 = 0x43530004
	// 0x43530005 is coord's: a chat's turns, one transaction at a time.
)

// idleInTransaction is how long the server keeps a session of the journal's
// pools that sits in a transaction with nothing asked: the journal's own
// transactions ask without a pause, and a stranded one holds up every writer
// that needs its rows or the audit trail (openPostgres).
const idleInTransaction = 10 * time.Second

// openPostgres connects j to the database of url and applies pending migrations.
func (j *Journal) openPostgres(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return errors.New("bad PostgreSQL URL") // the parse error may quote the password
	}
	// Beside the store's pools (sqlstore.OpenPostgres: at most 14
	// connections), the journal holds one connection per lock it holds for
	// good (its replica name, its leadership, its ownership).
	cfg.RuntimeParams["synchronous_commit"] = "on"
	// A transaction of the journal waits for nothing but the database, so one
	// that sits idle has lost its client: a process cut off from the database
	// by a link gone silent, whose session the server never hears leave. Ended,
	// it no longer holds the rows and the audit trail's lock that every other
	// writer waits for.
	if j.idleInTx <= 0 {
		j.idleInTx = idleInTransaction
	}
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(j.idleInTx.Milliseconds(), 10)
	j.pg = &pgStore{config: cfg, where: Where(url)}
	if j.db, err = sqlstore.OpenPostgres(ctx, cfg); err != nil {
		return err
	}
	j.pg.schema = j.db.Schema()
	if err := j.migratePostgres(ctx); err != nil {
		j.db.Close()
		return err
	}
	j.startFlusher()
	return nil
}

// migratePostgres applies, in one transaction, every embedded PostgreSQL
// migration not yet in schema_migrations. The transaction first takes the
// migration lock, so two processes opening a new database at once do not both
// migrate: the second waits, then finds nothing left to do.
func (j *Journal) migratePostgres(ctx context.Context) error {
	names := migrationFiles(j.d)
	tx, err := j.db.Pool(durable).BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, $2)", lockMigrate, sqlstore.AdvisoryKey(j.pg.schema)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	_, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at BIGINT NOT NULL)`)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, j.d.SchemaVersion).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(names) {
		return fmt.Errorf("schema version %d is newer than this binary knows (%d)", version, len(names))
	}
	for i := version; i < len(names); i++ {
		src, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(src)); err != nil {
			return fmt.Errorf("migration postgres/%s: %w", path.Base(names[i]), err)
		}
		if isAuditMigration(names[i]) {
			if err := j.genesisPostgres(ctx, tx); err != nil {
				return fmt.Errorf("migration postgres/%s: %w", path.Base(names[i]), err)
			}
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO schema_migrations(version, name, applied_at) VALUES($1, $2, $3)",
			i+1, path.Base(names[i]), ms(time.Now()))
		if err != nil {
			return fmt.Errorf("migration postgres/%s: %w", path.Base(names[i]), err)
		}
		j.migrated = append(j.migrated, migrationName(names[i]))
	}
	return tx.Commit()
}

// genesisPostgres writes the audit trail's first record in the migration's
// transaction, holding the audit lock from the digest on: a writer of an older
// binary, which appends no records but took that lock for each of its whole
// transactions, may not slip a fact between the history's digest and the
// genesis that commits to it.
func (j *Journal) genesisPostgres(ctx context.Context, tx *sql.Tx) error {
	if err := lockAuditTrail(ctx, tx, sqlstore.AdvisoryKey(j.pg.schema)); err != nil {
		return err
	}
	t := txn{Tx: sqlstore.Plain(tx, j.d), chain: &chain{}}
	if err := writeGenesis(ctx, t, time.Now().UTC()); err != nil {
		return err
	}
	return t.flushAudit(ctx)
}

// lockAuditTrail takes, inside tx, the lock under which the audit trail of the
// journal whose schema hashes to key is appended to, until tx ends: one append
// (a flush, or the genesis) at a time, each after the last committed one.
func lockAuditTrail(ctx context.Context, tx *sql.Tx, key int32) error {
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, $2)", lockAudit, key); err != nil {
		return fmt.Errorf("wait to append to the audit trail: %w", err)
	}
	return nil
}

// ownPostgres takes the ownership of transport: a session-level advisory lock on
// a connection of its own, held until Close or until the process dies and its
// connection drops. The connection's application_name carries the pid, for the
// message a second owner gets.
func (j *Journal) ownPostgres(ctx context.Context, transport string) error {
	conn, ok, err := j.tryAdvisory(ctx, lockOwn, sqlstore.AdvisoryKey(j.pg.schema, transport), 0)
	if err != nil {
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	if !ok {
		pid, _, _ := j.ownerPostgres(ctx, transport)
		return &OwnedError{Transport: transport, Lock: j.ownerLockName(transport), PID: pid}
	}
	j.pg.owners = append(j.pg.owners, conn)
	return nil
}

// ownerApp prefixes the application_name of an owner's connection.
const ownerApp = "countersign owner pid "

func (j *Journal) ownerLockName(transport string) string {
	return fmt.Sprintf("advisory lock %s on %s, schema %s", transport, j.pg.where, j.pg.schema)
}

// ownerPostgres looks in pg_locks for the session holding transport's owner lock.
func (j *Journal) ownerPostgres(ctx context.Context, transport string) (pid int, owned bool, err error) {
	var app string
	err = j.db.QueryRowContext(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND l.classid = CAST(? AS BIGINT)::oid AND l.objid = CAST(? AS BIGINT)::oid`,
		int64(lockOwn), int64(sqlstore.AdvisoryKey(j.pg.schema, transport))).Scan(&app)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("journal: owner of %s: %w", transport, err)
	}
	pid, _ = strconv.Atoi(strings.TrimPrefix(app, ownerApp))
	return pid, true, nil
}

// close ends the owners' sessions, which releases their locks.
func (p *pgStore) close() error {
	var errs []error
	for _, c := range p.owners {
		errs = append(errs, closeConn(c)())
	}
	p.owners = nil
	return errors.Join(errs...)
}

// IsUnreachable reports whether err is the database out of reach rather than a
// refusal of the write: a connection that failed, was reset or timed out, or a
// session the server ended (a restart, a shutdown, a session killed). The
// write may or may not have been made; a surface takes its work again later,
// and a replay finds what was made (a task's origin) and goes on from there.
func IsUnreachable(err error) bool {
	if err == nil {
		return false
	}
	var (
		ne net.Error
		ce *pgconn.ConnectError
	)
	if errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	code, _ := pgCode(err)
	// 08: connection exception; 57P01..57P03: the server shutting down or
	// starting, a session terminated.
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// pgCode is the SQLSTATE of a PostgreSQL error, "" for any other error.
func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}
