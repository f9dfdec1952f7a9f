// Package sqlstore is the SQL plumbing under the journal and the replicas'
// shared state (coord): a database of either backend, SQLite or PostgreSQL,
// with its pools, its write path and the words its backend says its own way
// (Dialect). Statements are written once, with ? placeholders; what differs by
// backend is in the dialect and in the backend's migrations, not rewritten at
// run time.
//
// Writes go through Write. On SQLite, which lets one writer in at a time and
// whose busy handler makes the others retry in sleeps rather than queue, the
// writers of this process queue on a writer lock shared by every DB open on
// the file (gateFor), and never meet the busy handler among themselves; the
// busy timeout is left for other processes on the same file. On PostgreSQL
// writes run side by side, each guarded by the rows it changes, pipelined in
// as few round trips as they can (pgTx). Reads take no lock: in WAL mode
// they never wait for the writer.
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mattn/go-sqlite3"
)

// Commit says which pool a write goes through.
type Commit int

const (
	// Durable writes wait for the disk at commit (SQLite's synchronous=FULL,
	// PostgreSQL's synchronous_commit on).
	Durable Commit = iota
	// Lazy writes do not (synchronous=NORMAL, synchronous_commit off): what
	// needs no fsync of its own, such as an update marked handled (a replay of
	// it is a no-op). It survives a crash of the process at once, and a power
	// cut from the next durable commit on, which syncs the whole write-ahead
	// log, its frames included.
	Lazy
)

// DB is an open database. It is safe for concurrent use.
type DB struct {
	d       *Dialect
	durable *sql.DB
	lazy    *sql.DB
	gate    *gate  // SQLite: the writer lock; nil on PostgreSQL
	schema  string // PostgreSQL: the current_schema() of the pools' connections
	commits atomic.Int64
	trips   atomic.Int64 // round trips of write transactions on PostgreSQL (pgTx)
	turns   [2]*turns    // PostgreSQL: the writes' turns on each pool, by Commit (turn)
	closed  sync.Once
}

// Dialect is the words of db's backend.
func (db *DB) Dialect() *Dialect { return db.d }

// SQLiteOptions are how OpenSQLite opens a file.
type SQLiteOptions struct {
	// Busy is SQLite's busy timeout: how long a writer of another process
	// (the CLI beside a running bot) waits before it fails.
	Busy time.Duration
	// MaxPages caps the file at that many pages of PageSize; 0 leaves it
	// uncapped. A write past the cap fails as on a full disk.
	MaxPages int64
	// Snapshot opens the file immutable and read-only: SQLite makes no
	// write-ahead log or shared-memory file beside it, and every write fails.
	Snapshot bool
	// Writers is how many writers of this process may be inside SQLite at
	// once: 1 (0 means 1), unless a benchmark measures without the lock.
	Writers int
}

// PageSize is SQLite's default page size, which the store keeps.
const PageSize = 4096

// cacheKiB bounds each SQLite connection's page cache (SQLite's default is
// 2,000 KiB). A read on another connection after any write finds the
// write-ahead log changed and drops its whole cache, so in a bot that writes
// every few milliseconds a cache rarely outlives a statement; at the default,
// every pooled connection kept up to 2 MB of C heap that the process never gave
// back. 512 KiB holds the pages a statement walks (the journal's indexes are
// three or four levels deep).
const cacheKiB = 512

// OpenSQLite opens the SQLite file at file, creating it when it does not
// exist (unless o.Snapshot). It connects lazily: the first statement finds
// out whether the file can be opened.
func OpenSQLite(file string, o SQLiteOptions) *DB {
	db := &DB{d: SQLite}
	q := url.Values{}
	q.Set("_cache_size", strconv.Itoa(-cacheKiB))
	if o.Snapshot {
		db.gate = newGate(1)
		q.Set("mode", "ro")
		q.Set("immutable", "1")
		db.durable = sql.OpenDB(connector{dsn: "file:" + file + "?" + q.Encode(), driver: db.driver(false, 0)})
		return db
	}
	db.gate = gateFor(file)
	if o.Writers > 1 {
		db.gate.release()
		db.gate = newGate(o.Writers)
	}
	q.Set("_journal_mode", "WAL") // readers never block the writer
	q.Set("_busy_timeout", strconv.FormatInt(o.Busy.Milliseconds(), 10))
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "FULL") // a committed write survives power loss
	q.Set("_txlock", "immediate") // take the write lock at BEGIN: no upgrade deadlocks
	// Each connection keeps its last 128 statements prepared: a store's
	// statements are a nearly fixed set, and a send's forty-odd statements
	// otherwise pay SQLite's parser and planner every time (and the driver a
	// fresh statement's column names), about a quarter of its allocations.
	q.Set("_stmt_cache_size", "128")
	db.durable = sql.OpenDB(connector{dsn: "file:" + file + "?" + q.Encode(), driver: db.driver(true, o.MaxPages)})
	q.Set("_synchronous", "NORMAL") // lazy: the write-ahead log is synced by the next durable commit
	db.lazy = sql.OpenDB(connector{dsn: "file:" + file + "?" + q.Encode(), driver: db.driver(false, o.MaxPages)})
	db.lazy.SetMaxOpenConns(1)
	return db
}

// connector opens each pooled connection with the store's own settings, which
// a DSN cannot carry (max_page_count is per connection).
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.driver }

// driver opens connections capped at maxPages; those of durable commits are
// counted (Commits).
func (db *DB) driver(durable bool, maxPages int64) *sqlite3.SQLiteDriver {
	return &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if durable {
			c.RegisterCommitHook(func() int { db.commits.Add(1); return 0 })
		}
		if maxPages == 0 {
			return nil
		}
		_, err := c.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", maxPages), nil)
		return err
	}}
}

// A store on PostgreSQL opens at most maxDurableConns connections for its
// reads and durable writes, and maxLazyConns for its lazy ones. Unbounded, a
// burst opened one per statement in flight: three replicas sending to sixty
// chats held 80 connections of a server whose default max_connections is
// 100, past which every new statement fails. Statements beyond the bound wait
// for a connection; none waits for a second one while it holds one.
const (
	maxDurableConns = 10
	maxLazyConns    = 4
	// MaxConns is the most connections a store on PostgreSQL opens.
	MaxConns = maxDurableConns + maxLazyConns
)

// durableTurns is how many durable writes a store on PostgreSQL runs at once,
// twice the cores it runs on, at least 4 and at most the pool's connections;
// the others wait for their turn, first come first served (turn). More
// writes at once than that add nothing a second: a write is mostly the
// server's CPU, and every one in flight shares it, so each takes longer,
// and the slowest the longest. With all ten connections writing on two
// cores, a burst of 16 writers' slowest sends (p99) took about twice
// SQLite's, whose writers queue on its lock; with 4 at once, about as long
// (docs/performance.md). Reads take no turn: a connection is left for them.
var durableTurns = min(maxDurableConns, max(4, 2*runtime.NumCPU()))

// OpenPostgres opens pools on the database cfg names: a durable one, whose
// commits wait for the WAL to be on disk whatever the server's default, and a
// lazy one, whose commits do not. It connects to read the schema its
// connections work in (Schema), and fails when it cannot.
func OpenPostgres(ctx context.Context, cfg *pgx.ConnConfig) (*DB, error) {
	durable := cfg.Copy()
	durable.RuntimeParams["synchronous_commit"] = "on"
	lazy := cfg.Copy()
	lazy.RuntimeParams["synchronous_commit"] = "off"
	db := &DB{d: Postgres, durable: stdlib.OpenDB(*durable), lazy: stdlib.OpenDB(*lazy)}
	db.durable.SetMaxOpenConns(maxDurableConns)
	db.lazy.SetMaxOpenConns(maxLazyConns)
	// A pool keeps two idle connections by default and closes the others as
	// they come back: after each burst of writes it closed most of them, and
	// the next burst opened them again, each a new server process and its
	// statements prepared again. It keeps them all, within the same bound.
	db.durable.SetMaxIdleConns(maxDurableConns)
	db.lazy.SetMaxIdleConns(maxLazyConns)
	db.turns = [2]*turns{Durable: newTurns(durableTurns), Lazy: newTurns(maxLazyConns)}
	if err := db.durable.QueryRowContext(ctx, "SELECT current_schema()").Scan(&db.schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return db, nil
}

// Schema is the PostgreSQL schema db works in ("" on SQLite): two stores in
// two schemas of one database never share an advisory lock (AdvisoryKey).
func (db *DB) Schema() string { return db.schema }

// AdvisoryKey hashes parts into a PostgreSQL advisory lock's second key, kept
// positive so that it compares equal to pg_locks' objid (an oid). The first
// key names the lock's purpose; parts start with the schema (Schema).
func AdvisoryKey(parts ...string) int32 {
	h := fnv.New32a()
	h.Write([]byte(strings.Join(parts, "\x00")))
	return int32(h.Sum32() & 0x7fffffff)
}

// QueryContext reads, without the writer lock. On SQLite, where a read waits
// for nothing, the end of ctx stops it between rows (readRows) rather than
// being watched by a goroutine of database/sql's for every query.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (Rows, error) {
	if db.gate != nil && ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, err := db.durable.QueryContext(context.WithoutCancel(ctx), db.d.Bind(query), args...)
		if err != nil {
			return nil, err
		}
		return &readRows{Rows: rows, ctx: ctx}, nil
	}
	return db.durable.QueryContext(ctx, db.d.Bind(query), args...)
}

// readRows are the rows of a read on SQLite, which stop at the next row once
// ctx has ended, with its error.
type readRows struct {
	*sql.Rows
	ctx context.Context
	err error
}

func (r *readRows) Next() bool {
	if r.err = r.ctx.Err(); r.err != nil {
		return false
	}
	return r.Rows.Next()
}

func (r *readRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Err()
}

// QueryRowContext reads one row, without the writer lock. On SQLite the read
// runs without ctx's end once begun: a one-row read takes microseconds, and a
// context that can end costs a goroutine a read (sqliteTx says more).
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) Row {
	if db.gate != nil && ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			return errRow{err}
		}
		ctx = context.WithoutCancel(ctx)
	}
	return db.durable.QueryRowContext(ctx, db.d.Bind(query), args...)
}

// Pool is the pool of c, for what a Tx cannot do: a transaction with options
// of its own (a snapshot, a migration's), SQLite's VACUUM INTO. A write there
// skips the writer lock: on SQLite, hold it (LockWriter).
func (db *DB) Pool(c Commit) *sql.DB {
	if c == Lazy && db.lazy != nil {
		return db.lazy
	}
	return db.durable
}

// Write waits for the writer lock (or for ctx to end, returning its error),
// then runs fn in a write transaction on the pool c names and commits it when
// fn returns nil. On PostgreSQL there is no writer lock: its writes run side
// by side, each guarded by the rows it changes (RowLock), and pipelined
// (pgTx), each after taking its turn on the pool (turn).
func (db *DB) Write(ctx context.Context, c Commit, fn func(*Tx) error) error {
	if db.gate == nil {
		err := db.writePG(ctx, c, &db.trips, fn)
		if err == nil && c == Durable {
			db.commits.Add(1) // SQLite's are counted by its commit hook (driver)
		}
		return err
	}
	unlock, err := db.LockWriter(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	tx, err := beginSQLite(ctx, db.Pool(c), db.d)
	if err != nil {
		return err
	}
	return run(ctx, tx, fn)
}

// WriteAside is Write on PostgreSQL for a durable write that keeps the store
// itself (the audit trail's flush), not the facts its callers write: it is
// not counted in Commits or Trips, which price its callers' writes. On
// SQLite it is Write.
func (db *DB) WriteAside(ctx context.Context, fn func(*Tx) error) error {
	if db.gate == nil {
		return db.writePG(ctx, Durable, new(atomic.Int64), fn)
	}
	return db.Write(ctx, Durable, fn)
}

func (db *DB) writePG(ctx context.Context, c Commit, trips *atomic.Int64, fn func(*Tx) error) error {
	release, err := db.turn(ctx, c)
	if err != nil {
		return err
	}
	defer release()
	return runPG(ctx, db.Pool(c), trips, func(p *pgTx) error {
		return run(ctx, &Tx{p: p, d: db.d}, fn)
	})
}

// turn waits, on PostgreSQL, for a write's turn on the pool c names, in the
// order the writes asked (or for ctx to end), and returns what gives it back.
// A pool hands a connection that comes free to a waiter chosen at random
// (database/sql), so that in a burst of more writers than connections a
// write could lose again and again to later ones: a send's four writes, each
// a fresh draw, made the burst's slowest sends several times its mean. The
// durable turns are at most as many as the pool's connections (durableTurns),
// the lazy ones as many, and a write takes one before
// it asks the pool for a connection: the writes queue here, first come first
// served, and one that has its turn seldom waits for the pool (only for the
// reads, which take no turn).
func (db *DB) turn(ctx context.Context, c Commit) (release func(), err error) {
	q := db.turns[c]
	if q == nil {
		return func() {}, nil
	}
	if err := q.take(ctx); err != nil {
		return nil, err
	}
	return q.give, nil
}

// turns is a queue of writes for a pool's connections: first come, first
// served.
type turns struct {
	mu      sync.Mutex
	free    int
	waiting []chan struct{} // in the order they came; closed when served
	queued  func()          // for tests: called once a write waits in the queue
}

func newTurns(n int) *turns { return &turns{free: n} }

// take waits for a turn, or for ctx to end.
func (q *turns) take(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	if q.free > 0 && len(q.waiting) == 0 {
		q.free--
		q.mu.Unlock()
		return nil
	}
	served := make(chan struct{})
	q.waiting = append(q.waiting, served)
	if q.queued != nil {
		q.queued()
	}
	q.mu.Unlock()
	select {
	case <-served:
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		i := slices.Index(q.waiting, served)
		if i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
		}
		q.mu.Unlock()
		if i < 0 {
			q.give() // served as ctx ended: the turn goes on to the next
		}
		return ctx.Err()
	}
}

// give gives a turn back: to the first write waiting, if any.
func (q *turns) give() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) > 0 {
		close(q.waiting[0])
		q.waiting = q.waiting[1:]
		return
	}
	q.free++
}

// run runs fn in t and commits.
func run(ctx context.Context, t *Tx, fn func(*Tx) error) error {
	if err := fn(t); err != nil {
		t.rollback()
		return err
	}
	if err := t.commit(ctx); err != nil {
		t.rollback()
		return err
	}
	return nil
}

// Exec runs one statement as a write transaction of its own on the pool c
// names: on PostgreSQL in one round trip, since nothing else goes with it.
func (db *DB) Exec(ctx context.Context, c Commit, query string, args ...any) (sql.Result, error) {
	if db.gate == nil {
		release, err := db.turn(ctx, c)
		if err != nil {
			return nil, err
		}
		defer release()
		res, err := db.Pool(c).ExecContext(ctx, db.d.Bind(query), args...)
		if err == nil && c == Durable {
			db.commits.Add(1)
		}
		return res, err
	}
	return db.ExecBuilt(ctx, c, func() (string, []any) { return query, args })
}

// ExecBuilt is Exec of the statement build makes once the write has its
// connection (PostgreSQL) or the writer lock (SQLite): for a statement that
// says how long ago something happened, as of when it runs.
func (db *DB) ExecBuilt(ctx context.Context, c Commit, build func() (string, []any)) (sql.Result, error) {
	if db.gate == nil {
		release, err := db.turn(ctx, c)
		if err != nil {
			return nil, err
		}
		defer release()
		conn, err := db.Pool(c).Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		query, args := build()
		res, err := conn.ExecContext(ctx, db.d.Bind(query), args...)
		if err == nil && c == Durable {
			db.commits.Add(1)
		}
		return res, err
	}
	var res sql.Result
	err := db.Write(ctx, c, func(tx *Tx) error {
		query, args := build()
		var err error
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// WriteRow runs a write that returns one row (RETURNING) as a transaction of
// its own, and scans the row into dest.
func (db *DB) WriteRow(ctx context.Context, c Commit, query string, args []any, dest ...any) error {
	if db.gate == nil {
		release, err := db.turn(ctx, c)
		if err != nil {
			return err
		}
		defer release()
		err = db.Pool(c).QueryRowContext(ctx, db.d.Bind(query), args...).Scan(dest...)
		if err == nil && c == Durable {
			db.commits.Add(1)
		}
		return err
	}
	return db.Write(ctx, c, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, query, args...).Scan(dest...)
	})
}

// WriteRows runs a write that returns rows (RETURNING) as a transaction of
// its own, in one round trip, and calls each with each row. On SQLite it
// holds the writer lock until the rows are read.
func (db *DB) WriteRows(ctx context.Context, c Commit, query string, args []any, each func(Row) error) error {
	read := func(rows Rows) error {
		defer rows.Close()
		for rows.Next() {
			if err := each(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	if db.gate == nil {
		release, err := db.turn(ctx, c)
		if err != nil {
			return err
		}
		defer release()
		rows, err := db.Pool(c).QueryContext(ctx, db.d.Bind(query), args...)
		if err != nil {
			return err
		}
		if err := read(rows); err != nil {
			return err
		}
		if c == Durable {
			db.commits.Add(1)
		}
		return nil
	}
	return db.Write(ctx, c, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		return read(rows)
	})
}

// LockWriter takes the writer lock of db's file (waiting for it, or for ctx
// to end), until unlock is called; on PostgreSQL, which has none, it takes
// nothing.
func (db *DB) LockWriter(ctx context.Context) (unlock func(), err error) {
	if db.gate == nil {
		return func() {}, nil
	}
	if err := db.gate.lock(ctx); err != nil {
		return nil, fmt.Errorf("wait to write: %w", err)
	}
	return db.gate.unlock, nil
}

// Commits returns how many write transactions db has committed durably since
// it was opened: each waited for the disk (an fsync of SQLite's write-ahead
// log, of PostgreSQL's WAL), the figure that prices a write.
func (db *DB) Commits() int64 { return db.commits.Load() }

// Trips returns the round trips db's write transactions made on PostgreSQL.
func (db *DB) Trips() int64 { return db.trips.Load() }

// Close closes db's pools and gives back its share of the writer lock, once
// however often it is called.
func (db *DB) Close() error {
	var err error
	db.closed.Do(func() {
		err = db.durable.Close()
		if db.lazy != nil {
			if lerr := db.lazy.Close(); err == nil {
				err = lerr
			}
		}
		db.gate.release()
	})
	return err
}

// gate is the writer lock: a one-slot channel, so that a writer whose context
// ends stops waiting. Every DB open on one file in this process shares its
// gate (gateFor), so two of them queue too.
type gate struct {
	slot chan struct{}
	key  string // its entry in gates; "" for a gate of its own
	refs int    // the open DBs holding it, guarded by gates
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

// gates holds the gate of each SQLite file open in this process.
var gates = struct {
	sync.Mutex
	m map[string]*gate
}{m: map[string]*gate{}}

// gateFor returns the gate of file, shared by every DB open on it; release
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
	if g == nil || g.key == "" { // nil: a store on PostgreSQL has no gate
		return
	}
	gates.Lock()
	defer gates.Unlock()
	if g.refs--; g.refs == 0 {
		delete(gates.m, g.key)
	}
}
