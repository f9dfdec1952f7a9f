package journal

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/sqlstore"
	"github.com/countersign/countersign/policy"
)

// The audit trail is a chain of records, one per fact a person may have to
// account for: every transition of an operation (a human's resolution of an
// unknown outcome is one), every approval asked (bound to the payload's hash)
// and every decision on one (approved, rejected, expired, withdrawn, by whom).
// A record is written in the transaction of its fact, so it costs no durable
// commit of its own. On SQLite it is appended there, after the head, under the
// writer lock every write holds. On PostgreSQL, whose writes run side by side,
// it is queued there in audit_pending, and a flush chains the queued records
// in batches under the audit lock (auditpending.go): writers never take turns
// on the trail. Each record carries the hash of the one before: hash =
// SHA-256(prev_hash || canonical form), prev_hash and hash in lowercase hex,
// the first record's prev_hash 64 zeros. VerifyAudit (auditverify.go) walks
// the chain and checks the journal's own tables against it.

// The records' bodies are audit's types (audit.TransitionFact and the
// others), which the offline check reads back: the journal converts its own
// types (State, Decision, policy.UserID, policy.Factor) into them here.

// chain collects the records of one write transaction; write appends them,
// after the head they follow, just before it commits, or on PostgreSQL queues
// them in audit_pending for a flush to chain (auditpending.go).
type chain struct {
	off  bool
	head *head // SQLite: the journal's guess at the trail's head
	// queue, on PostgreSQL, says that the records go to audit_pending;
	// queued says that some did, and a flush is due once they commit.
	queue, queued bool
	pending       []audit.Record
}

// head is the last record this journal appended on SQLite: most often still
// the trail's head, so an append need not read it first. An append after it
// checks that it is (another process on the same file may have appended
// since), and reads the head when it is not.
type head struct {
	mu   sync.Mutex
	seq  int64
	hash string
}

func (h *head) get() (int64, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq, h.hash
}

func (h *head) set(seq int64, hash string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq, h.hash = seq, hash
}

// audit queues a record of the fact body about operation op, to be appended
// in this transaction.
func (t txn) audit(kind, op, ref string, at time.Time, body any) {
	if t.chain == nil || t.chain.off {
		return
	}
	t.chain.pending = append(t.chain.pending, audit.Record{At: ms(at), Kind: kind, Operation: op, Ref: ref, Body: json.RawMessage(mustJSON(body))})
}

// flushAudit writes the queued records inside the transaction of the facts.
// On PostgreSQL a write queues them in audit_pending (queueAudit), and a
// flush chains them later; the genesis, written by its migration under the
// audit lock, is chained at once. On SQLite, whose writer holds the writer
// lock, they are appended after the trail's head: one statement when the
// journal's last append is still the head, a read of the head and an insert
// otherwise.
func (t txn) flushAudit(ctx context.Context) error {
	c := t.chain
	if c == nil || len(c.pending) == 0 {
		return nil
	}
	defer func() { c.pending = c.pending[:0] }()
	if c.queue {
		return t.queueAudit(ctx)
	}
	if c.head != nil { // SQLite's: on PostgreSQL a flush appends (auditpending.go)
		if seq, hash := c.head.get(); hash != "" {
			n, err := t.appendAudit(ctx, seq, hash)
			if isUnique(err) {
				n, err = 0, nil // the guessed seq is taken; the failed statement changed nothing
			}
			if err != nil || n == int64(len(c.pending)) {
				return err
			}
		}
	}
	seq, hash, err := auditHead(ctx, t)
	if err != nil {
		return fmt.Errorf("journal: audit head: %w", err)
	}
	_, err = t.appendAudit(ctx, seq, hash)
	return err
}

// appendAudit inserts the queued records after the record seq whose hash is
// prev, and returns how many rows it inserted. A seq already taken fails it
// (on SQLite, where a failed statement leaves its transaction usable, the
// guess's miss: the seqs after a head are taken only by appends after it).
func (t txn) appendAudit(ctx context.Context, seq int64, prev string) (int64, error) {
	c := t.chain
	for i := range c.pending {
		r := &c.pending[i]
		seq++
		r.Seq, r.PrevHash = seq, prev
		r.Hash = r.Sum()
		prev = r.Hash
	}
	query, args := auditInsert(t.Dialect(), c.pending)
	res, err := t.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("journal: append to the audit trail: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("journal: append to the audit trail: %w", err)
	}
	if c.head != nil && n > 0 {
		c.head.set(seq, prev) // if the transaction then fails, the next guess misses and reads
	}
	return n, nil
}

// auditInsertJSON inserts records given as one JSON array of rows, on SQLite:
// one argument for a transaction's records instead of eight a record, each
// boxed (a send writes eight records). json_each reads them back in order,
// and ->> gives each string's exact bytes and each number as an integer.
const auditInsertJSON = `INSERT INTO audit(seq, at, kind, operation_id, ref, body, prev_hash, hash)
	SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7 FROM json_each(?)`

// auditInsert is the statement, with its arguments, that inserts records
// (chained already): the JSON rows of auditInsertJSON on SQLite, where every
// string is valid UTF-8 without a NUL (which JSON would not give back
// exactly), else one row of arguments a record.
func auditInsert(d *sqlstore.Dialect, records []audit.Record) (string, []any) {
	if d == sqlstore.SQLite && jsonExact(records) {
		b := make([]byte, 0, 512*len(records))
		b = append(b, '[')
		for i := range records {
			r := &records[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = strconv.AppendInt(b, r.Seq, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, r.At, 10)
			for _, s := range [...]string{r.Kind, r.Operation, r.Ref} {
				b = audit.AppendJSONString(append(b, ','), s)
			}
			b = audit.AppendJSONString(append(b, ','), r.Body)
			for _, s := range [...]string{r.PrevHash, r.Hash} {
				b = audit.AppendJSONString(append(b, ','), s)
			}
			b = append(b, ']')
		}
		return auditInsertJSON, []any{string(append(b, ']'))}
	}
	var b strings.Builder
	args := make([]any, 0, 8*len(records))
	b.WriteString("INSERT INTO audit(seq, at, kind, operation_id, ref, body, prev_hash, hash) VALUES ")
	for i := range records {
		r := &records[i]
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.Seq, r.At, r.Kind, r.Operation, r.Ref, string(r.Body), r.PrevHash, r.Hash)
	}
	return b.String(), args
}

// jsonExact reports whether every string of records comes back from JSON
// byte for byte: valid UTF-8 (JSON would give U+FFFD for the rest) and no
// NUL (SQLite's text would end there).
func jsonExact(records []audit.Record) bool {
	exact := func(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }
	for i := range records {
		r := &records[i]
		body := utf8.Valid(r.Body) && bytes.IndexByte(r.Body, 0) < 0
		if !body || !exact(r.Kind) || !exact(r.Operation) || !exact(r.Ref) || !exact(r.PrevHash) || !exact(r.Hash) {
			return false
		}
	}
	return true
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) sqlstore.Row
}

// auditHead returns the seq and hash of the trail's last record (0 and
// audit.ZeroHash when it has none).
func auditHead(ctx context.Context, q queryRower) (int64, string, error) {
	var seq int64
	var hash string
	err := q.QueryRowContext(ctx, "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, audit.ZeroHash, nil
	}
	return seq, hash, err
}

// auditTransition queues the record of the transition row seq.
func (t txn) auditTransition(id string, seq int64, f audit.TransitionFact) {
	f.Transition = seq
	t.audit(audit.Transition, id, strconv.FormatInt(seq, 10), fromMS(f.At), f)
}

// auditApproval queues the record of an approval asked.
func (t txn) auditApproval(a *Approval) {
	t.audit(audit.Approval, a.OperationID, a.ID, a.Created, approvalAsked(*a))
}

// auditDecision queues the record of a decision on approval a.
func (t txn) auditDecision(a *Approval, d Decision, by policy.UserID, at time.Time) {
	t.audit(audit.Decision, a.OperationID, a.ID, at, decisionFact(a.ID, d, by, at, a.Grant))
}

func decisionFact(id string, d Decision, by policy.UserID, at time.Time, grant string) audit.ApprovalFact {
	return audit.ApprovalFact{Approval: id, Decision: string(d), By: int64(by), At: ms(at), Grant: grant}
}

func approvalAsked(a Approval) audit.ApprovalFact {
	f := audit.ApprovalFact{Approval: a.ID, PayloadSHA256: a.PayloadSHA256, Requester: int64(a.Requester), Created: ms(a.Created), Expires: ms(a.Expires)}
	if a.Required > 1 {
		f.Required = a.Required
	}
	f.StepUp = string(a.StepUp)
	return f
}

// writeGenesis queues the trail's first record, in the transaction of the
// migration that creates the trail: the history before it, hashed.
func writeGenesis(ctx context.Context, t txn, now time.Time) error {
	g, err := digestHistory(ctx, t, -1, nil, nil)
	if err != nil {
		return fmt.Errorf("audit genesis: %w", err)
	}
	t.audit(audit.Genesis, "", "", now, g)
	return nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (sqlstore.Rows, error)
}

// digestHistory hashes the history a genesis record covers: the transitions
// through seq through (all of them when through < 0), then the approvals that
// chained reports as having no approval record (all of them when chained is
// nil), by id, each with its decision unless pending names it (nil: unless it
// is still waiting). It returns the genesis body that history makes.
func digestHistory(ctx context.Context, q queryer, through int64, chained map[string]bool, pending map[string]bool) (audit.GenesisFact, error) {
	var g audit.GenesisFact
	h := sha256.New()
	query, args := "SELECT seq, operation_id, from_state, to_state, reason, at FROM transitions ORDER BY seq", []any{}
	if through >= 0 {
		query, args = "SELECT seq, operation_id, from_state, to_state, reason, at FROM transitions WHERE seq <= ? ORDER BY seq", []any{through}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return g, err
	}
	for rows.Next() {
		var op string
		var f audit.TransitionFact
		if err := rows.Scan(&f.Transition, &op, &f.From, &f.To, &f.Reason, &f.At); err != nil {
			rows.Close()
			return g, err
		}
		g.Transitions = f.Transition
		fmt.Fprintf(h, "transition %s %s\n", op, mustJSON(f))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return g, err
	}
	if through >= 0 {
		g.Transitions = through
	}
	rows, err = q.QueryContext(ctx, "SELECT "+approvalBase+" FROM approvals ORDER BY id")
	if err != nil {
		return g, err
	}
	defer rows.Close()
	for rows.Next() {
		a, err := scanApprovalBase(rows)
		if err != nil {
			return g, err
		}
		if chained[a.ID] {
			continue
		}
		g.Approvals++
		f := approvalAsked(a)
		waiting := a.Decision == Pending
		if pending != nil {
			waiting = pending[a.ID]
		}
		if waiting {
			g.Pending = append(g.Pending, a.ID)
		} else {
			f.Decision, f.By, f.At = string(a.Decision), int64(a.DecidedBy), ms(a.DecidedAt)
		}
		fmt.Fprintf(h, "approval %s %s\n", a.OperationID, mustJSON(f))
	}
	if err := rows.Err(); err != nil {
		return g, err
	}
	g.History = hex.EncodeToString(h.Sum(nil))
	return g, nil
}

// AuditRecords calls fn with every record of the trail from seq since on
// (since 0 or 1: all of them), in order, and stops at fn's first error, which
// it returns. On PostgreSQL it first chains the records still pending
// (FlushAudit), so that an export holds every fact committed before the call.
func (j *Journal) AuditRecords(ctx context.Context, since int64, fn func(audit.Record) error) error {
	if err := j.FlushAudit(ctx); err != nil {
		return err
	}
	return auditRecords(ctx, j.db, since, fn)
}

// ExportAudit writes to w the export of the trail from seq since on that
// "countersign audit export" writes and audit.Check verifies offline: every
// record (AuditRecords), then the public keys of every passkey ever enrolled,
// removed ones too, so that each receipt verifies with the export alone (no
// such line when none was), then the signature line by key. It returns that
// line. A failed read or write is its error, and w then holds a part.
func (j *Journal) ExportAudit(ctx context.Context, w io.Writer, key ed25519.PrivateKey, since int64) (audit.Signature, error) {
	e := audit.NewWriter(w, key)
	if err := j.AuditRecords(ctx, since, e.Add); err != nil {
		return audit.Signature{}, fmt.Errorf("journal: export the audit trail: %w", err)
	}
	passkeys, err := j.PasskeysEver(ctx)
	if err != nil {
		return audit.Signature{}, fmt.Errorf("journal: export the audit trail: %w", err)
	}
	if len(passkeys) > 0 {
		keys := make([]audit.PasskeyKey, len(passkeys))
		for i, c := range passkeys {
			keys[i] = c.Key()
		}
		if err := e.Keys(keys); err != nil {
			return audit.Signature{}, fmt.Errorf("journal: export the audit trail: %w", err)
		}
	}
	sig, err := e.Close()
	if err != nil {
		return sig, fmt.Errorf("journal: export the audit trail: %w", err)
	}
	return sig, nil
}

// auditRecords reads the chained records from seq since on, through q.
func auditRecords(ctx context.Context, q queryer, since int64, fn func(audit.Record) error) error {
	rows, err := q.QueryContext(ctx, "SELECT seq, at, kind, operation_id, ref, body, prev_hash, hash FROM audit WHERE seq >= ? ORDER BY seq", since)
	if err != nil {
		return fmt.Errorf("journal: read the audit trail: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r audit.Record
		var body string
		if err := rows.Scan(&r.Seq, &r.At, &r.Kind, &r.Operation, &r.Ref, &body, &r.PrevHash, &r.Hash); err != nil {
			return fmt.Errorf("journal: read the audit trail: %w", err)
		}
		r.Body = json.RawMessage(body)
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("journal: read the audit trail: %w", err)
	}
	return nil
}

// isAuditMigration reports whether the migration at file creates the audit
// trail, after which its genesis is written in the same transaction.
func isAuditMigration(file string) bool { return strings.HasSuffix(file, "_audit.sql") }
