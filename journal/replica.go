package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/internal/sqlstore"
)

// Several processes may send one transport's operations from one journal (on
// PostgreSQL, behind a load balancer): replicas. Each Joins under a name of its
// own. From then on every move it makes, and every update it receives, is
// claimed by it for a lease, which it renews while it lives (RenewLeases). What a dead
// replica held is taken over once its lease is past: an update it received and
// never handled is handled by another (ClaimUpdates), an operation it approved or
// scheduled is run by another (the operator's watch), and a commit it left
// committing is moved to unknown (RecoverExpired), never sent again, because
// nobody can know whether its request took effect. The move to committing is a
// compare-and-set, so two replicas never both send one operation. One replica at
// a time leads (Lead): it polls, shows late cards and writes the vault.

// ReasonLeaseExpired is the reason of the move from committing to unknown that a
// replica makes for a commit another replica left on the wire: that replica's
// lease ran out (it died, or lost the database) while the request was out.
const ReasonLeaseExpired = "lease_expired"

// DefaultLease is how long a replica's claim holds without a renewal: far longer
// than the renewals' interval (the operator renews every second), short enough
// that a dead replica's work is taken over within seconds.
const DefaultLease = 10 * time.Second

// rep is what Join made of a journal: its replica name, lease and name lock.
type rep struct {
	name string
	// life names this process among those that joined under name, one after
	// another: what it holds for its requests alone (send slots) is renewed by
	// it, never by the next process of the name.
	life  string
	lease time.Duration
	lock  func() error // releases the name lock
	// conn is the session that holds the name lock on PostgreSQL (nil on
	// SQLite). The lock lives as long as the session: RenewLeases and ProveHolding ask on it,
	// so that a replica whose session the server ended knows it is no longer
	// the only process of its name.
	connMu sync.Mutex
	conn   *pgx.Conn
	// lost is closed when the name lock is found lost (NameLost).
	lost     chan struct{}
	lostOnce sync.Once
	// stop ends the name lock's keeper (keepName) as the journal leaves.
	stop chan struct{}
}

// ErrReplicaRunning means a live process has joined under the same replica name.
var ErrReplicaRunning = errors.New("a replica of this name is running")

var replicaName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Join makes this journal the replica name among the processes that send
// transport's operations: its moves and received updates are claimed for lease
// (DefaultLease when 0). Two live processes cannot join under one name
// (ErrReplicaRunning). The commits the same name left committing, in a process
// that died, are moved to unknown at once with the reason crash_recovery
// (Recovered lists them): a name is one process at a time, so nothing of it can
// still be on the wire (coord.Joined drops the chats' turns it held or waited for). Close
// leaves.
func (j *Journal) Join(ctx context.Context, transport, name string, lease time.Duration) error {
	if !replicaName.MatchString(name) {
		return fmt.Errorf("journal: join: bad replica name %q: 1 to 64 letters, digits, '.', '_' or '-'", name)
	}
	if transport == "" || !replicaName.MatchString(transport) {
		return fmt.Errorf("journal: join: bad transport name %q", transport)
	}
	if j.rep != nil {
		return fmt.Errorf("journal: join: already replica %s", j.rep.name)
	}
	if lease <= 0 {
		lease = DefaultLease
	}
	unlock, conn, err := j.lockName(ctx, name, lease)
	if err != nil {
		return err
	}
	j.rep = &rep{name: name, life: NewID(name), lease: lease, lock: unlock, conn: conn, lost: make(chan struct{}), stop: make(chan struct{})}
	if conn != nil {
		go j.keepName(lease / 4)
	}
	ids, err := j.claimedIn(ctx, transport, name)
	if err == nil {
		err = j.recoverIDs(ctx, ids, ReasonCrashRecovery)
	}
	if err != nil {
		return fmt.Errorf("journal: join %s as %s: %w", transport, name, err)
	}
	return nil
}

// Replica is the name this journal joined under, "" when it is no replica.
func (j *Journal) Replica() string {
	if j.rep == nil {
		return ""
	}
	return j.rep.name
}

// Life names this process among those that joined under its replica name,
// one after another ("" when it is no replica): what it holds for its
// requests alone (send slots) is renewed by it, never by the next process of
// the name.
func (j *Journal) Life() string {
	if j.rep == nil {
		return ""
	}
	return j.rep.life
}

// Store is the journal's database, on which what replicas share beside the
// journal (package coord) keeps its tables.
func (j *Journal) Store() *sqlstore.DB { return j.db }

// Clock is the journal's clock: time.Now, unless WithClock.
func (j *Journal) Clock() func() time.Time { return j.now }

// Lease is how long this replica's claims hold without a renewal (0 when it is
// no replica).
func (j *Journal) Lease() time.Duration {
	if j.rep == nil {
		return 0
	}
	return j.rep.lease
}

// lockName takes the lock of a replica name: a session-level advisory lock on a
// connection of its own on PostgreSQL, a lock file beside the journal on SQLite.
// Either dies with its process; on PostgreSQL, too, with a session that says
// nothing for a lease (see tryAdvisory).
func (j *Journal) lockName(ctx context.Context, name string, lease time.Duration) (unlock func() error, conn *pgx.Conn, err error) {
	taken := fmt.Errorf("journal: join as %s: %w: stop it first, or give this process another -replica name", name, ErrReplicaRunning)
	if j.pg != nil {
		conn, ok, err := j.tryAdvisory(ctx, lockReplica, sqlstore.AdvisoryKey(j.pg.schema, name), lease)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: join as %s: %w", name, err)
		}
		if !ok {
			return nil, nil, taken
		}
		return closeConn(conn), conn, nil
	}
	f, ok, err := tryFileLock(j.file + ".replica-" + name + ".lock")
	if err != nil || !ok {
		if err == nil {
			err = taken
		}
		return nil, nil, fmt.Errorf("journal: join as %s: %w", name, err)
	}
	return f.Close, nil, nil
}

// tryFileLock takes the lock of the file at path, creating it, without waiting,
// and writes this process's id in it (for the message a second process prints).
// ok is false, and no file is kept, when another open file holds it.
func tryFileLock(path string) (f *os.File, ok bool, err error) {
	if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, false, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, true, nil
}

// tryAdvisory takes a session-level advisory lock on a new connection of its own,
// which holds it until it is closed or its process dies. ok is false, and no
// connection is kept, when another session holds the lock.
//
// With quiet above 0, the server ends the session, and the lock with it, once
// its client has said nothing for that long (idle_session_timeout, PostgreSQL
// 14 and later; older servers keep it as before). A process cut off from the
// database by a link gone silent is never heard leaving: without it the server
// would keep the lock for the session until its TCP keepalive gives up (two
// hours and more by default), and no process of the name could join, nor any
// replica lead, until then. The holder asks on the session far more often.
func (j *Journal) tryAdvisory(ctx context.Context, k1, k2 int32, quiet time.Duration) (*pgx.Conn, bool, error) {
	cfg := j.pg.config.Copy()
	cfg.RuntimeParams["application_name"] = ownerApp + strconv.Itoa(os.Getpid())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, false, fmt.Errorf("connect to %s: %w", j.pg.where, err)
	}
	if quiet > 0 {
		_, err := conn.Exec(ctx, "SELECT set_config('idle_session_timeout', $1, false)", strconv.FormatInt(quiet.Milliseconds(), 10))
		if code, _ := pgCode(err); err != nil && code != "42704" { // 42704: a server before 14 has no such setting
			conn.Close(ctx)
			return nil, false, fmt.Errorf("bound the lock's session at %s: %w", j.pg.where, err)
		}
	}
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", k1, k2).Scan(&ok); err != nil || !ok {
		conn.Close(ctx)
		return nil, false, err
	}
	return conn, true, nil
}

// closeConn ends an advisory lock's session: its unlock.
func closeConn(c *pgx.Conn) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Unlock first: the server ends a closed session a moment later, and a look
		// right after must find the lock free.
		_, err := c.Exec(ctx, "SELECT pg_advisory_unlock_all()")
		return errors.Join(err, c.Close(ctx))
	}
}

// claimedIn returns the operations of transport in committing that replica name
// claimed.
func (j *Journal) claimedIn(ctx context.Context, transport, name string) ([]string, error) {
	return j.ids(ctx, "SELECT id FROM operations WHERE claimed_by = ? AND state = ? AND transport = ? AND "+liveState+" ORDER BY created_at, id", name, Committing, transport)
}

// recoverIDs moves each operation of ids still committing to unknown with reason,
// and records it in Recovered.
func (j *Journal) recoverIDs(ctx context.Context, ids []string, reason string) error {
	for _, id := range ids {
		err := j.Move(ctx, id, Move{From: Committing, To: Unknown, Reason: reason, AttemptOutcome: "interrupted"})
		if errors.Is(err, ErrStateChanged) {
			continue
		}
		if err != nil {
			return fmt.Errorf("recover %s: %w", id, err)
		}
		j.recovered = append(j.recovered, id)
	}
	return nil
}

// RenewLeases extends the leases of what this replica holds: its operations
// approved, waiting for a retry or committing, and the updates it received
// and has not handled (what it holds beside the journal, its chats' turns and
// send slots, coord.RenewLeases renews). The operator renews every second. It
// waits for no fsync (a lease lost to a power cut belongs to a replica that is
// gone too). A journal that is no replica has nothing to renew.
func (j *Journal) RenewLeases(ctx context.Context) error {
	if j.rep == nil {
		return nil
	}
	// A replica that lost its name lock renews nothing: what it held is the
	// others' once its lease runs out.
	if err := j.checkName(ctx); err != nil {
		return fmt.Errorf("journal: renew the leases of %s: %w", j.rep.name, err)
	}
	by := j.rep.name
	until, args := j.LeaseUntil()
	err := j.write(ctx, lazy, func(tx txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE operations SET lease_until = `+until+` WHERE claimed_by = ? AND state IN (?, ?, ?) AND `+liveState,
			append(args, by, Approved, RetryWait, Committing)...)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE inbox SET lease_until = `+until+` WHERE claimed_by = ? AND handled_at = 0`, append(args, by)...)
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: renew the leases of %s: %w", by, err)
	}
	return nil
}

// Release gives up this replica's claims on the work it is not doing any more, as
// it stops: its operations approved or waiting for a retry, and its unhandled
// updates, are free to the other replicas at once instead of after the lease
// (its places in its chats' queues: coord.Release). Its commits stay claimed:
// one that is still on the wire is this process's to finish, and one it left
// there is recovered as any other.
func (j *Journal) Release(ctx context.Context) error {
	if j.rep == nil {
		return nil
	}
	err := j.write(ctx, lazy, func(tx txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE operations SET lease_until = 0 WHERE claimed_by = ? AND state IN (?, ?) AND `+liveState,
			j.rep.name, Approved, RetryWait)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE inbox SET lease_until = 0 WHERE claimed_by = ? AND handled_at = 0`, j.rep.name)
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: release the claims of %s: %w", j.rep.name, err)
	}
	return nil
}

// RecoverExpired moves to unknown, with the reason lease_expired, every operation
// of transport left committing by another replica whose lease is past: that
// replica died (or lost the database) with the request out, and nobody can know
// whether it took effect. Each move checks the lease again in its transaction, so
// a renewal that came first keeps the operation where it is. It returns the
// operations it moved. Only a replica recovers; the commits this replica holds
// are its own to finish.
func (j *Journal) RecoverExpired(ctx context.Context, transport string) ([]string, error) {
	if j.rep == nil {
		return nil, nil
	}
	now, nowArgs := j.LeaseClock(sqlstore.Nearest)
	ids, err := j.ids(ctx, `SELECT id FROM operations WHERE transport = ? AND state = ? AND `+liveState+` AND lease_until < `+now+` AND claimed_by != ?
		ORDER BY created_at, id`, append(append([]any{transport, Committing}, nowArgs...), j.rep.name)...)
	if err != nil {
		return nil, fmt.Errorf("journal: expired leases: %w", err)
	}
	var moved []string
	for _, id := range ids {
		err := j.tx(ctx, func(tx txn) error {
			var until, now int64
			var by string
			clock, args := j.LeaseClock(sqlstore.Nearest)
			// Locked: a renewal that has not committed yet is waited for, and
			// one that comes later finds the operation moved.
			err := tx.QueryRowContext(ctx, "SELECT lease_until, claimed_by, "+clock+" FROM operations WHERE id = ? AND state = ?"+tx.RowLock(" FOR UPDATE"),
				append(args, id, Committing)...).Scan(&until, &by, &now)
			if err != nil || until >= now || by == j.rep.name {
				return errNoRowsChanged // moved on, or renewed, in the meantime
			}
			detail := fmt.Sprintf("replica %s stopped renewing its lease", orNobodyName(by))
			return j.move(ctx, tx, id, Move{From: Committing, To: Unknown, Reason: ReasonLeaseExpired, AttemptOutcome: "interrupted", AttemptDetail: detail})
		})
		if errors.Is(err, errNoRowsChanged) {
			continue
		}
		if err != nil {
			return moved, fmt.Errorf("journal: recover %s: %w", id, err)
		}
		moved = append(moved, id)
	}
	return moved, nil
}

func orNobodyName(name string) string {
	if name == "" {
		return "(none)"
	}
	return name
}

// ClaimUpdates claims for this replica up to limit received updates whose
// handling never finished and whose claim is free: received before replicas (no
// claim), or by a replica whose lease is past. With own, the updates this
// replica's name claimed are taken too: at its start, what the same name left
// unfinished in a process that died. They are returned in the order they were
// received. On PostgreSQL the rows are taken with FOR UPDATE SKIP LOCKED. A
// journal that is no replica claims nothing: it replays Unhandled.
func (j *Journal) ClaimUpdates(ctx context.Context, limit int, own bool) ([]InboxItem, error) {
	if j.rep == nil {
		return nil, nil
	}
	by := j.rep.name
	now, nowArgs := j.LeaseClock(sqlstore.Nearest)
	until, untilArgs := j.LeaseUntil()
	cond := "handled_at = 0 AND lease_until < " + now + " AND claimed_by != ?"
	if own {
		cond = "handled_at = 0 AND (lease_until < " + now + " OR claimed_by = ?)"
	}
	query := "SELECT key, update_id, body FROM inbox WHERE " + cond + " ORDER BY received_at, " + j.d.Seq + " LIMIT ?"
	if j.pg != nil {
		query += " FOR UPDATE SKIP LOCKED"
	}
	var items []InboxItem
	err := j.tx(ctx, func(tx txn) error {
		rows, err := tx.QueryContext(ctx, query, append(nowArgs, by, limit)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var it InboxItem
			var body string
			if err := rows.Scan(&it.Key, &it.UpdateID, &body); err != nil {
				rows.Close()
				return err
			}
			it.Body = []byte(body)
			items = append(items, it)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, it := range items {
			if _, err := tx.ExecContext(ctx, "UPDATE inbox SET claimed_by = ?, lease_until = "+until+" WHERE key = ?", append(append([]any{by}, untilArgs...), it.Key)...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: claim updates: %w", err)
	}
	return items, nil
}

// ids runs a query of operation ids.
func (j *Journal) ids(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := j.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// leads holds the leadership locks this journal took, by transport.
type leads struct {
	mu sync.Mutex
	m  map[string]*lead
}

type lead struct {
	conn *pgx.Conn // PostgreSQL
	file *os.File  // SQLite
}

// Lead tries to make this process the leader of transport's replicas, without
// waiting: it reports whether it leads (already, or from now). The leader is the
// one replica that polls, shows the cards nobody showed and writes the vault.
// Leadership is the lock Own takes, without Own's crash recovery (a replica
// recovers by lease): a session-level advisory lock on a connection of its own on
// PostgreSQL, the owner's lock file on SQLite. It ends with its process, with
// Close, or with Resign, and on PostgreSQL when its connection drops (Leading
// tells).
func (j *Journal) Lead(ctx context.Context, transport string) (bool, error) {
	j.leads.mu.Lock()
	defer j.leads.mu.Unlock()
	if j.leads.m[transport] != nil {
		return true, nil
	}
	var l lead
	if j.pg != nil {
		// Leading asks on the session every time it is called (every second,
		// by the operator), far more often than a replica's lease.
		conn, ok, err := j.tryAdvisory(ctx, lockOwn, sqlstore.AdvisoryKey(j.pg.schema, transport), j.Lease())
		if err != nil || !ok {
			if err != nil {
				err = fmt.Errorf("journal: lead %s: %w", transport, err)
			}
			return false, err
		}
		l.conn = conn
	} else {
		f, ok, err := tryFileLock(j.ownerFile(transport))
		if err != nil || !ok {
			if err != nil {
				err = fmt.Errorf("journal: lead %s: %w", transport, err)
			}
			return false, err
		}
		l.file = f
	}
	if j.leads.m == nil {
		j.leads.m = map[string]*lead{}
	}
	j.leads.m[transport] = &l
	return true, nil
}

// Leading reports whether this process still leads transport. On PostgreSQL it
// asks the lock's session, and gives the leadership up when the session is gone
// (the server released the lock with it, and another replica may hold it now).
func (j *Journal) Leading(ctx context.Context, transport string) bool {
	j.leads.mu.Lock()
	defer j.leads.mu.Unlock()
	l := j.leads.m[transport]
	if l == nil {
		return false
	}
	if l.conn == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		l.conn.Close(context.Background())
		delete(j.leads.m, transport)
		return false
	}
	return true
}

// Resign gives up the leadership of transport, if this process holds it.
func (j *Journal) Resign(transport string) error {
	j.leads.mu.Lock()
	defer j.leads.mu.Unlock()
	l := j.leads.m[transport]
	delete(j.leads.m, transport)
	return l.release()
}

func (l *lead) release() error {
	switch {
	case l == nil:
		return nil
	case l.conn != nil:
		return closeConn(l.conn)()
	default:
		return l.file.Close()
	}
}

// leave releases what Join and Lead took: Close calls it.
func (j *Journal) leave() error {
	j.leads.mu.Lock()
	var errs []error
	for t, l := range j.leads.m {
		errs = append(errs, l.release())
		delete(j.leads.m, t)
	}
	j.leads.mu.Unlock()
	if j.rep != nil && j.rep.lock != nil {
		close(j.rep.stop)
		j.rep.connMu.Lock()
		errs = append(errs, j.rep.lock())
		j.rep.lock = nil
		j.rep.connMu.Unlock()
	}
	return errors.Join(errs...)
}
