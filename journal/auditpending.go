package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/sqlstore"
)

// On PostgreSQL a write does not append to the audit trail itself: the trail
// is one line, and appends onto it take turns (the audit lock), so writers
// that each appended took turns with every other audited write of the
// cluster, for the length of a commit. Instead a write inserts its facts'
// records into audit_pending, in the facts' own transaction, and commits
// durably like any write: the facts and their records are on disk together,
// and concurrent commits share their flushes to disk. No lock, no head.
//
// A flush (chainPending) then chains pending records into audit, in
// batches: in one transaction it takes the audit lock, reads the trail's head
// and the committed pending records in id order, inserts them after the head,
// each with the hash of the one before, and deletes them from audit_pending.
// Both or neither: a flush lost to a crash is redone from the pending rows.
// The records of one operation are chained in the order of their facts: a
// later fact's transaction writes only once the earlier one has committed
// (their rows are locked), so its pending id is higher, and it is never
// visible to a flush without the earlier one.
//
// Each journal runs a flusher: signalled after each audited commit (one
// flush at a time; a signal during a flush causes one more, at least
// flushGap after the start of the one before), every
// flushEvery (so that the records a dead process committed are chained by
// the others), and once more at Close. Readers of the trail flush first
// (FlushAudit), and VerifyAudit also reads what is still pending in the same
// snapshot as the facts, since writers go on committing meanwhile.

// pendingBatch is the most records one flush chains in one transaction.
const pendingBatch = 512

// defaultFlushEvery is how often a journal on PostgreSQL chains whatever is
// pending, its own writes' signals aside.
const defaultFlushEvery = time.Second

// flushGap is the least time between the start of a flush and that of the
// next one a signal asks for: under a stream of writes each flush takes what
// commits in that time, in one batch and one commit, rather than one flush
// (and its wait for the disk) per write beside the writers' own.
const flushGap = 50 * time.Millisecond

// flusher is a journal's background flush on PostgreSQL.
type flusher struct {
	kick    chan struct{} // one signal waits at most: signals during a flush coalesce
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// startFlusher starts j's flusher, unless a test asked for none
// (WithoutAuditFlush).
func (j *Journal) startFlusher() {
	if j.noFlush {
		return
	}
	every := j.flushEvery
	if every <= 0 {
		every = defaultFlushEvery
	}
	f := &flusher{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	j.flush = f
	go j.flushLoop(f, every)
}

// signal asks for a flush soon, without waiting for it.
func (f *flusher) signal() {
	if f == nil {
		return
	}
	select {
	case f.kick <- struct{}{}:
	default: // a flush is already asked for; it will take this commit's records too
	}
}

func (j *Journal) flushLoop(f *flusher, every time.Duration) {
	defer close(f.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last time.Time
	for {
		idle := false
		select {
		case <-f.stop:
			return
		case <-f.kick:
			if wait := flushGap - time.Since(last); wait > 0 {
				gap := time.NewTimer(wait)
				select {
				case <-f.stop: // the flush at Close takes what is pending
					gap.Stop()
					return
				case <-gap.C:
				}
			}
		case <-tick.C:
			idle = true
		}
		last = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		// A failed flush leaves the records pending, to the next signal or
		// tick; a reader that needs them chained flushes itself and sees the
		// error (FlushAudit).
		if !idle || j.anyPending(ctx) {
			j.chainPending(ctx)
		}
		cancel()
	}
}

// stopFlusher stops the flusher and waits for its flush in progress. A
// signal after it is dropped: the flush at Close takes its records.
func (j *Journal) stopFlusher() {
	if f := j.flush; f != nil {
		f.stopped.Do(func() {
			close(f.stop)
			<-f.done
		})
	}
}

// anyPending reports whether a record waits to be chained, without the lock:
// an idle tick costs one indexed read.
func (j *Journal) anyPending(ctx context.Context) bool {
	var any bool
	err := j.db.Pool(durable).QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM audit_pending)").Scan(&any)
	return err != nil || any
}

// FlushAudit chains every audit record committed so far and still pending
// into the trail, and returns once they are, or with the error that stopped
// it. On PostgreSQL a write's records wait in audit_pending until a flush
// (see above); whoever reads the trail and needs it whole up to now, an
// export or a check, flushes first. On SQLite every record is chained in its
// fact's transaction, and it does nothing.
func (j *Journal) FlushAudit(ctx context.Context) error {
	if j.pg == nil {
		return nil
	}
	return j.chainPending(ctx)
}

// chainPending flushes batches until one finds fewer than a full batch
// pending.
func (j *Journal) chainPending(ctx context.Context) error {
	for {
		n, err := j.chainBatch(ctx)
		if err != nil {
			return fmt.Errorf("journal: chain pending audit records: %w", err)
		}
		if n < pendingBatch {
			return nil
		}
	}
}

// chainBatch chains up to pendingBatch pending records, in id order, after
// the trail's head, in one transaction that holds the audit lock (the key
// every append has taken, so that a process of an older binary, which
// appends itself, queues with it), and returns how many it chained. Its
// statements run under READ COMMITTED: each one after the lock sees every
// flush committed before it took the lock. Its commit waits for the disk
// (synchronous_commit on, as every durable write): once a record is visible
// in the trail it is durable, so that an export never states a head that a
// crash could take back and a later flush chain differently.
//
// It is a write of the journal's pipelined path (sqlstore.DB.WriteAside),
// taking its turn with the writers: the lock, the pending records and the
// head in one round trip, the records moved into the trail in a second, the
// commit in a third. The records' contents stay on the server: the flush
// sends back only where each goes in the chain (seq, prev_hash, hash), and
// the statement that deletes the pending rows inserts what it deleted.
func (j *Journal) chainBatch(ctx context.Context) (int, error) {
	var n int
	err := j.db.WriteAside(ctx, func(tx *sqlstore.Tx) error {
		n = 0
		if err := tx.Later(ctx, "wait to append to the audit trail", "SELECT pg_advisory_xact_lock(?, ?)",
			lockAudit, sqlstore.AdvisoryKey(j.pg.schema)); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT p.id, p.at, p.kind, p.operation_id, p.ref, p.body, h.seq, h.hash
			FROM (SELECT id, at, kind, operation_id, ref, body FROM audit_pending ORDER BY id LIMIT ?) p
			LEFT JOIN (SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1) h ON true
			ORDER BY p.id`, pendingBatch)
		if err != nil {
			return fmt.Errorf("read pending records: %w", err)
		}
		var ids []int64
		var recs []audit.Record
		var head sql.NullInt64
		var prev sql.NullString
		for rows.Next() {
			var id int64
			var r audit.Record
			var body string
			if err := rows.Scan(&id, &r.At, &r.Kind, &r.Operation, &r.Ref, &body, &head, &prev); err != nil {
				rows.Close()
				return fmt.Errorf("read pending records: %w", err)
			}
			r.Body = json.RawMessage(body)
			ids, recs = append(ids, id), append(recs, r)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read pending records: %w", err)
		}
		if len(recs) == 0 {
			return nil
		}
		seq, hash := head.Int64, prev.String
		if !prev.Valid { // an empty trail
			seq, hash = 0, audit.ZeroHash
		}
		seqs, prevs, hashes := make([]int64, len(recs)), make([]string, len(recs)), make([]string, len(recs))
		for i := range recs {
			r := &recs[i]
			seq++
			r.Seq, r.PrevHash = seq, hash
			r.Hash = r.Sum()
			hash = r.Hash
			seqs[i], prevs[i], hashes[i] = r.Seq, r.PrevHash, r.Hash
		}
		// One statement for any batch: the pending rows removed by id (never
		// by range: a row with a lower id may commit after this read, and is
		// chained by the next flush), and inserted into the trail as they
		// were read, each with its place in the chain.
		res, err := tx.ExecContext(ctx, `WITH chained AS (DELETE FROM audit_pending WHERE id = ANY(?)
				RETURNING id, at, kind, operation_id, ref, body)
			INSERT INTO audit(seq, at, kind, operation_id, ref, body, prev_hash, hash)
			SELECT l.seq, c.at, c.kind, c.operation_id, c.ref, c.body, l.prev_hash, l.hash
			FROM chained c JOIN unnest(CAST(? AS BIGINT[]), CAST(? AS BIGINT[]), CAST(? AS TEXT[]), CAST(? AS TEXT[])) AS l(id, seq, prev_hash, hash) USING (id)`,
			ids, ids, seqs, prevs, hashes)
		if err != nil {
			return fmt.Errorf("append to the audit trail: %w", err)
		}
		if got, err := res.RowsAffected(); err != nil || got != int64(len(recs)) {
			return fmt.Errorf("append to the audit trail: %d of %d records inserted (%v)", got, len(recs), err)
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// queueAudit inserts the transaction's records into audit_pending, in one
// statement, in their order: PostgreSQL's writes do not chain (see above).
func (t txn) queueAudit(ctx context.Context) error {
	c := t.chain
	if len(c.pending) == 0 {
		return nil
	}
	defer func() { c.pending = c.pending[:0] }()
	c.queued = true
	var b strings.Builder
	b.WriteString("INSERT INTO audit_pending(at, kind, operation_id, ref, body) VALUES ")
	args := make([]any, 0, 5*len(c.pending))
	for i, r := range c.pending {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, r.At, r.Kind, r.Operation, r.Ref, string(r.Body))
	}
	if err := t.Later(ctx, "queue audit records", b.String(), args...); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// transitionHead is how a transition's audit record begins: its body with
// the transition's seq at 0, the first field of audit.TransitionFact.
const transitionHead = `{"transition":0`

// logTransitionPG inserts, on PostgreSQL, transition f of operation id and
// queues its audit record in one statement, sent with the transaction's next
// (later). The record carries the seq the insert gives the row, which the
// server splices into the body the journal made, so that no round trip waits
// for the seq. Records queued before it go first, keeping their order.
func (t txn) logTransitionPG(ctx context.Context, id string, f audit.TransitionFact) error {
	const insert = `INSERT INTO transitions(operation_id, from_state, to_state, reason, at) VALUES(?, ?, ?, ?, ?)`
	args := []any{id, f.From, f.To, f.Reason, f.At}
	c := t.chain
	if c == nil || c.off {
		return t.Later(ctx, "log transition of "+id, insert, args...)
	}
	if err := t.queueAudit(ctx); err != nil {
		return err
	}
	f.Transition = 0
	body := mustJSON(f)
	if !strings.HasPrefix(body, transitionHead) {
		return fmt.Errorf("journal: a transition's record begins %.20q", body) // audit.TransitionFact lost its first field
	}
	c.queued = true
	return t.Later(ctx, "log transition of "+id, `WITH tr AS (`+insert+` RETURNING seq)
		INSERT INTO audit_pending(at, kind, operation_id, ref, body)
		SELECT CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(seq AS TEXT), CAST(? AS TEXT) || CAST(seq AS TEXT) || CAST(? AS TEXT) FROM tr`,
		append(args, f.At, audit.Transition, id, strings.TrimSuffix(transitionHead, "0"), body[len(transitionHead):])...)
}

// pendingRecord is an audit record not yet chained: its id in audit_pending,
// and the record without seq and hashes.
type pendingRecord struct {
	id int64
	audit.Record
}

// readPending reads the records still pending, in id order (the order a
// flush chains them in).
func readPending(ctx context.Context, q queryer) ([]pendingRecord, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, at, kind, operation_id, ref, body FROM audit_pending ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("journal: read pending audit records: %w", err)
	}
	defer rows.Close()
	var ps []pendingRecord
	for rows.Next() {
		var p pendingRecord
		var body string
		if err := rows.Scan(&p.id, &p.At, &p.Kind, &p.Operation, &p.Ref, &body); err != nil {
			return nil, fmt.Errorf("journal: read pending audit records: %w", err)
		}
		p.Body = json.RawMessage(body)
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: read pending audit records: %w", err)
	}
	return ps, nil
}

// snapshot runs fn with a read-only transaction that sees the journal as of
// one moment (REPEATABLE READ on PostgreSQL), so that what fn reads from
// several tables agrees while writers go on. On SQLite it passes the reader,
// whose statements each read the last commit, as they did before.
func (j *Journal) snapshot(ctx context.Context, fn func(q queryer) error) error {
	if j.pg == nil {
		return fn(j.db)
	}
	tx, err := j.db.Pool(durable).BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("journal: snapshot: %w", err)
	}
	defer tx.Rollback()
	return fn(txn{Tx: sqlstore.Plain(tx, j.d)})
}
