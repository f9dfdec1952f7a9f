package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/sqlstore"
)

// Operation is one tool call: its payload, where it stands, and what came of it.
type Operation struct {
	ID          string
	TaskID      string
	Tool        string
	Fingerprint string
	// Surface is where the request came from (telegram, console, ...); Transport is
	// what delivers it. Only the process that owns Transport ever commits it.
	Surface, Transport string
	Payload            action.Payload
	PayloadSHA256      string
	// Fix is the repair by schema applied to deliveries of this payload, if any.
	Fix *action.Fix
	// Verdict is the verifier's summary of the payload ("pass (3 checks)").
	Verdict  string
	State    State
	Attempts int
	// PartsDone counts the parts of a split text known to be delivered; a commit
	// resumes at the next one, so a part is never sent twice.
	PartsDone int
	// Evidence is what the service confirmed so far (one message id per part).
	Evidence *action.Evidence
	// RetryAt is when a scheduled retry is due, while State is RetryWait.
	RetryAt  time.Time
	Result   *action.Result
	Envelope string
	Created  time.Time
	Updated  time.Time
	// ClaimedBy is the replica that moved the operation last ("" for a process
	// that is no replica), and LeaseUntil when its claim runs out unless renewed
	// (see Join).
	ClaimedBy  string
	LeaseUntil time.Time
}

// CreateOperation stores a new operation in state prepared, with the transition that
// created it, and returns it with its id and times set. The payload hash is computed
// here, from the payload stored. The moves in then, when given, are made in the same
// transaction, in order (each with its own transition): a call that is prepared,
// verified and awaiting approval costs one durable write, not three. An Approval in
// a move of then is bound here to the new operation and the hash of its payload as
// stored.
func (j *Journal) CreateOperation(ctx context.Context, o Operation, reason string, then ...Move) (Operation, error) {
	_, o, err := j.create(ctx, nil, o, reason, then)
	return o, err
}

// CreateFirstOperation stores a new task and its first operation (see CreateTask
// and CreateOperation) in one transaction: a task that starts with a tool call is
// durable with that call, and a crash before it leaves neither. A task with the
// same non-empty origin is refused with ErrDuplicate, and nothing is stored.
func (j *Journal) CreateFirstOperation(ctx context.Context, t Task, o Operation, reason string, then ...Move) (Task, Operation, error) {
	t, o, err := j.create(ctx, &t, o, reason, then)
	return t, o, err
}

// create stores t (when set), the operation o and the moves then, in one
// transaction; a clash of random ids is tried again with fresh ones.
func (j *Journal) create(ctx context.Context, t *Task, o Operation, reason string, then []Move) (Task, Operation, error) {
	var task Task
	var snap []byte
	var err error
	if t != nil {
		if snap, err = json.Marshal(t.Policy); err != nil {
			return *t, o, fmt.Errorf("journal: snapshot policy: %w", err)
		}
		t.Created = j.now().UTC()
		task = *t
	}
	payload, err := json.Marshal(o.Payload)
	if err != nil {
		return task, o, fmt.Errorf("journal: create operation: %w", err)
	}
	o.State, o.PayloadSHA256 = Prepared, o.Payload.SHA256()
	o.Created = j.now().UTC()
	o.Updated = o.Created
	for range 5 {
		o.ID = NewID(operationPrefix)
		err = j.tx(ctx, func(tx txn) error {
			if t != nil {
				task.ID = NewID("task")
				o.TaskID = task.ID
				if err := insertTask(ctx, tx, task, snap); err != nil {
					return err
				}
			}
			err := tx.Later(ctx, "insert operation", `INSERT INTO operations(id, task_id, tool, fingerprint, surface, transport, payload, payload_sha256, seen_key, state, created_at, updated_at)
				VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.ID, o.TaskID, o.Tool, o.Fingerprint, o.Surface, o.Transport, payload, o.PayloadSHA256, j.keyOf(o.Payload), o.State, ms(o.Created), ms(o.Created))
			if err != nil {
				return err
			}
			created := audit.TransitionFact{Task: o.TaskID, Tool: o.Tool, Surface: o.Surface, Transport: o.Transport, PayloadSHA256: o.PayloadSHA256, Replica: j.Replica()}
			if err := logTransition(ctx, tx, o.ID, "", Prepared, reason, o.Created, created); err != nil {
				return err
			}
			return j.moveNew(ctx, tx, &o, then)
		})
		if !isUnique(err) {
			break
		}
	}
	if isUniqueIndex(err) && t != nil {
		return task, o, fmt.Errorf("journal: task from %s: %w", task.Origin, ErrDuplicate)
	}
	if err != nil {
		return task, o, fmt.Errorf("journal: create operation: %w", err)
	}
	return task, o, nil
}

// moveNew makes the moves of a new operation, inside the transaction that created
// it, and keeps o's state, verdict and payload in step with them.
func (j *Journal) moveNew(ctx context.Context, tx txn, o *Operation, then []Move) error {
	for _, m := range then {
		if m.Approval != nil {
			m.Approval.OperationID, m.Approval.PayloadSHA256 = o.ID, o.PayloadSHA256
		}
		if m.From != o.State {
			return fmt.Errorf("journal: move %s %s -> %s: %w (it is %s)", o.ID, m.From, m.To, ErrStateChanged, o.State)
		}
		if err := j.moveOp(ctx, tx, o.ID, m, true); err != nil {
			return err
		}
		o.State = m.To
		if m.Verdict != "" {
			o.Verdict = m.Verdict
		}
	}
	return nil
}

// Move is one transition of an operation with the facts recorded along with it, all
// in one transaction.
type Move struct {
	From, To State
	Reason   string
	// Result, when set, replaces the operation's last result.
	Result *action.Result
	// RetryAt is stored with a move to RetryWait: a restart resumes the wait.
	RetryAt time.Time
	// Envelope, when set, records the vault note of the operation.
	Envelope string
	// Fix, when set, records a repair by schema.
	Fix *action.Fix
	// Payload, when set, replaces the payload (a re-prepare); its hash changes.
	Payload *action.Payload
	// PartsDone, when set, records how many parts are known to be delivered.
	PartsDone *int
	// StartAttempt opens a new attempt row: set it on every move to Committing,
	// which is written before the request leaves the process.
	StartAttempt bool
	// AttemptOutcome closes the open attempt with this outcome and AttemptDetail.
	AttemptOutcome, AttemptDetail string
	// Approval, when set, is created with the move (to AwaitingApproval).
	Approval *Approval
	// Verdict, when set, records the verifier's summary.
	Verdict string
	// Spend, when set, is what the move costs the task's budgets. It is taken in
	// the move's transaction: a move the budget cannot pay for does not happen
	// (ErrRetryBudget, ErrWaitBudget, ErrRepairBudget), and a move that does not
	// happen spends nothing.
	Spend *Spend
}

// Move applies m to operation id if the operation is in m.From. It returns
// ErrIllegalTransition for a move the state machine forbids, ErrStateChanged when the
// operation is no longer in m.From, and ErrNotFound for an unknown id.
func (j *Journal) Move(ctx context.Context, id string, m Move) error {
	return j.tx(ctx, func(tx txn) error { return j.move(ctx, tx, id, m) })
}

func (j *Journal) move(ctx context.Context, tx txn, id string, m Move) error {
	return j.moveOp(ctx, tx, id, m, false)
}

// moveOp makes move m of operation id in tx. fresh says that tx made the
// operation and knows it to be in m.From: nobody else sees its row, so the
// compare-and-set cannot miss and goes without waiting for its answer (later).
func (j *Journal) moveOp(ctx context.Context, tx txn, id string, m Move, fresh bool) error {
	m.Reason, m.Verdict, m.AttemptOutcome, m.AttemptDetail = keptText(m.Reason), keptText(m.Verdict), keptText(m.AttemptOutcome), keptText(m.AttemptDetail)
	if !CanMove(m.From, m.To) {
		return fmt.Errorf("journal: move %s: %w", id, illegal(m.From, m.To))
	}
	if m.To == Committing && j.lost() {
		return fmt.Errorf("journal: move %s to committing: %w", id, ErrReplicaLost)
	}
	now := j.now().UTC()
	by := j.Replica()
	until, untilArgs := j.LeaseUntil()
	// Room for every column a move may set, and the WHERE's arguments.
	set, args := make([]string, 0, 12), make([]any, 0, 16)
	set = append(set, "state = ?", "updated_at = ?", "claimed_by = ?", "lease_until = "+until)
	args = append(append(args, m.To, ms(now), by), untilArgs...)
	add := func(col string, v any) { set, args = append(set, col+" = ?"), append(args, v) }
	if m.Result != nil {
		add("result", mustJSON(m.Result))
	}
	add("retry_at", ms(m.RetryAt))
	if m.Envelope != "" {
		add("envelope", m.Envelope)
	}
	if m.Fix != nil {
		add("fix", mustJSON(m.Fix))
	}
	if m.Payload != nil {
		add("payload", mustJSON(m.Payload))
		add("payload_sha256", m.Payload.SHA256())
		add("seen_key", j.keyOf(*m.Payload))
	}
	if m.PartsDone != nil {
		add("parts_done", *m.PartsDone)
	}
	if m.Verdict != "" {
		add("verdict", m.Verdict)
	}
	if m.StartAttempt {
		set = append(set, "attempts = attempts + 1")
	}
	args = append(args, id, m.From)
	where := " WHERE id = ? AND state = ?"
	held, heldArgs := j.heldElsewhereSQL(m)
	if held != "" {
		// A replica sends only what it holds, what nobody holds, or what a
		// replica whose lease is past held: the move to committing is a
		// compare-and-set on the claim too, not on the state alone.
		where += " AND NOT " + held
		args = append(args, heldArgs...)
	}
	update := "UPDATE operations SET " + strings.Join(set, ", ") + where
	if fresh && held == "" {
		if err := tx.Later(ctx, "move "+id, update, args...); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	} else {
		res, err := tx.ExecContext(ctx, update, args...)
		if err != nil {
			return fmt.Errorf("journal: move %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return j.whyNotMoved(ctx, tx, id, m)
		}
	}
	if m.Spend != nil {
		if err := spend(ctx, tx, id, *m.Spend); err != nil {
			return fmt.Errorf("journal: move %s %s -> %s: %w", id, m.From, m.To, err)
		}
	}
	fact := audit.TransitionFact{Replica: by}
	if m.Payload != nil {
		fact.PayloadSHA256 = m.Payload.SHA256()
	}
	if m.Result != nil {
		fact.Result = json.RawMessage(mustJSON(m.Result))
	}
	if err := logTransition(ctx, tx, id, m.From, m.To, m.Reason, now, fact); err != nil {
		return fmt.Errorf("journal: move %s: %w", id, err)
	}
	return j.recordAttempt(ctx, tx, id, m, now)
}

func (j *Journal) whyNotMoved(ctx context.Context, tx txn, id string, m Move) error {
	var state State
	var by string
	err := tx.QueryRowContext(ctx, "SELECT state, claimed_by FROM operations WHERE id = ?", id).Scan(&state, &by)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("journal: operation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("journal: move %s: %w", id, err)
	}
	if state == m.From {
		return fmt.Errorf("journal: move %s %s -> %s: %w (replica %s, whose lease runs)", id, m.From, m.To, ErrHeld, by)
	}
	return fmt.Errorf("journal: move %s %s -> %s: %w (it is %s)", id, m.From, m.To, ErrStateChanged, state)
}

// heldElsewhereSQL is the condition, with its arguments, that another live
// replica holds an operation, for a move to committing by a replica; "" for
// any other move or a journal that is no replica. Free is the same rule, read
// from an operation already loaded.
func (j *Journal) heldElsewhereSQL(m Move) (string, []any) {
	if m.To != Committing || j.rep == nil {
		return "", nil
	}
	now, args := j.LeaseClock(sqlstore.Nearest)
	return "(claimed_by != '' AND claimed_by != ? AND lease_until >= " + now + ")", append([]any{j.rep.name}, args...)
}

func (j *Journal) recordAttempt(ctx context.Context, tx txn, id string, m Move, now time.Time) error {
	if m.AttemptOutcome != "" {
		err := tx.Later(ctx, "finish attempt of "+id, `UPDATE attempts SET finished_at = ?, outcome = ?, detail = ?
			WHERE operation_id = ? AND n = (SELECT attempts FROM operations WHERE id = ?)`,
			ms(now), m.AttemptOutcome, m.AttemptDetail, id, id)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	if m.StartAttempt {
		err := tx.Later(ctx, "start attempt of "+id, `INSERT INTO attempts(operation_id, n, started_at)
			SELECT id, attempts, CAST(? AS BIGINT) FROM operations WHERE id = ?`, ms(now), id)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	if m.Approval != nil {
		return insertApproval(ctx, tx, m.Approval)
	}
	return nil
}

// logTransition writes the transition row and queues its audit record, with
// what else the move recorded (fact).
func logTransition(ctx context.Context, tx txn, id string, from, to State, reason string, at time.Time, fact audit.TransitionFact) error {
	reason = keptText(reason)
	if tx.chain.queue { // a write on PostgreSQL, pipelined
		fact.From, fact.To, fact.Reason, fact.At = string(from), string(to), reason, ms(at)
		return tx.logTransitionPG(ctx, id, fact)
	}
	seq, err := insertID(ctx, tx, `INSERT INTO transitions(operation_id, from_state, to_state, reason, at) VALUES(?, ?, ?, ?, ?)`,
		id, from, to, reason, ms(at))
	if err != nil {
		return err
	}
	fact.From, fact.To, fact.Reason, fact.At = string(from), string(to), reason, ms(at)
	tx.auditTransition(id, seq, fact)
	return nil
}

// keptText is s as the journal keeps free text (a reason, a verdict, an
// attempt's detail), which often quotes another service's error: valid UTF-8
// with no NUL, each run of bad bytes and each NUL a U+FFFD. PostgreSQL's text
// refuses the raw bytes, and an audit record (JSON) would keep them otherwise
// than the row: kept as is, they would fail the write or the trail's check.
func keptText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("journal: marshal %T: %v", v, err)) // only our own plain structs reach here
	}
	return string(b)
}

const opColumns = `id, task_id, tool, fingerprint, surface, transport, payload, payload_sha256, fix, verdict, state, attempts, parts_done, evidence, retry_at, result, envelope, created_at, updated_at, claimed_by, lease_until`

func scanOperation(row interface{ Scan(...any) error }) (Operation, error) {
	var o Operation
	var payload, fix, evidence, result string
	var retryAt, created, updated, lease int64
	err := row.Scan(&o.ID, &o.TaskID, &o.Tool, &o.Fingerprint, &o.Surface, &o.Transport, &payload, &o.PayloadSHA256, &fix, &o.Verdict, &o.State,
		&o.Attempts, &o.PartsDone, &evidence, &retryAt, &result, &o.Envelope, &created, &updated, &o.ClaimedBy, &lease)
	if err != nil {
		return o, err
	}
	if err := json.Unmarshal([]byte(payload), &o.Payload); err != nil {
		return o, fmt.Errorf("payload of %s: %w", o.ID, err)
	}
	if fix != "" {
		o.Fix = new(action.Fix)
		if err := json.Unmarshal([]byte(fix), o.Fix); err != nil {
			return o, fmt.Errorf("fix of %s: %w", o.ID, err)
		}
	}
	if evidence != "" {
		o.Evidence = new(action.Evidence)
		if err := json.Unmarshal([]byte(evidence), o.Evidence); err != nil {
			return o, fmt.Errorf("evidence of %s: %w", o.ID, err)
		}
	}
	if result != "" {
		o.Result = new(action.Result)
		if err := json.Unmarshal([]byte(result), o.Result); err != nil {
			return o, fmt.Errorf("result of %s: %w", o.ID, err)
		}
	}
	o.RetryAt, o.Created, o.Updated, o.LeaseUntil = fromMS(retryAt), fromMS(created), fromMS(updated), fromMS(lease)
	return o, nil
}

// Operation returns an operation by id, or ErrNotFound.
func (j *Journal) Operation(ctx context.Context, id string) (Operation, error) {
	o, err := scanOperation(j.db.QueryRowContext(ctx, "SELECT "+opColumns+" FROM operations WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("journal: operation %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return o, fmt.Errorf("journal: operation %s: %w", id, err)
	}
	return o, nil
}

// Filter selects operations. Zero fields select everything.
type Filter struct {
	States      []State
	TaskID      string
	Fingerprint string
	Target      string
	Transport   string
	// SeenKey selects the operations of that seen key and those whose key is
	// not known (see WithSeenKey).
	SeenKey string
	Since   time.Time
	// Chat selects the operations of the tasks that came from that chat.
	Chat string
	// ChangedSince selects the operations last changed (moved) at or after it:
	// a rejection is dated by its decision, not by its request.
	ChangedSince time.Time
	// NoEnvelope selects the operations whose vault note is not recorded.
	NoEnvelope bool
	// WithEnvelope selects the operations whose vault note is recorded.
	WithEnvelope bool
	Limit        int
}

// Operations returns the operations that match f, newest first.
func (j *Journal) Operations(ctx context.Context, f Filter) ([]Operation, error) {
	where, args := f.where(j.d)
	query := "SELECT " + opColumns + " FROM operations WHERE " + where + " ORDER BY created_at DESC, " + j.d.Seq + " DESC"
	if f.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := j.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: list operations: %w", err)
	}
	defer rows.Close()
	var ops []Operation
	for rows.Next() {
		o, err := scanOperation(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: list operations: %w", err)
		}
		ops = append(ops, o)
	}
	return ops, rows.Err()
}

// Count returns how many operations match f (its Limit aside) without reading
// them: a start-up that says how many wait for a person must not load them all.
func (j *Journal) Count(ctx context.Context, f Filter) (int, error) {
	where, args := f.where(j.d)
	var n int
	if err := j.db.QueryRowContext(ctx, "SELECT count(*) FROM operations WHERE "+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("journal: count operations: %w", err)
	}
	return n, nil
}

// where is the SQL condition of f, Limit aside, in d's words, and its
// arguments.
func (f Filter) where(d *sqlstore.Dialect) (string, []any) {
	where, args := []string{"1=1"}, []any{}
	if len(f.States) > 0 {
		where = append(where, "state IN (?"+strings.Repeat(", ?", len(f.States)-1)+")")
		live := true
		for _, s := range f.States {
			args = append(args, s)
			live = live && !s.Final()
		}
		switch {
		case live:
			where = append(where, liveState) // so that operations_live serves it
		case len(f.States) == 1 && f.States[0] == Rejected:
			where = append(where, rejectedState) // operations_rejected
		}
	}
	for col, v := range map[string]string{"task_id": f.TaskID, "fingerprint": f.Fingerprint, d.JSONText("payload", "target"): f.Target, "transport": f.Transport} {
		if v != "" {
			where, args = append(where, col+" = ?"), append(args, v)
		}
	}
	if f.SeenKey != "" {
		where, args = append(where, "(seen_key = ? OR seen_key IS NULL)"), append(args, f.SeenKey)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, ms(f.Since))
	}
	if f.Chat != "" {
		// Row by row, by the task's key: "task_id IN (SELECT …)" read every
		// task to build its list, whatever index served the rest.
		where, args = append(where, "EXISTS (SELECT 1 FROM tasks WHERE tasks.id = operations.task_id AND tasks.chat = ?)"), append(args, f.Chat)
	}
	if !f.ChangedSince.IsZero() {
		where, args = append(where, "updated_at >= ?"), append(args, ms(f.ChangedSince))
	}
	if f.NoEnvelope {
		where = append(where, "envelope = ''")
	}
	if f.WithEnvelope {
		where = append(where, "envelope <> ''")
	}
	return strings.Join(where, " AND "), args
}

// Transition is one row of the audit log.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Transitions returns the audit log of one operation, oldest first.
func (j *Journal) Transitions(ctx context.Context, id string) ([]Transition, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT from_state, to_state, reason, at FROM transitions WHERE operation_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, fmt.Errorf("journal: transitions of %s: %w", id, err)
	}
	defer rows.Close()
	var ts []Transition
	for rows.Next() {
		var t Transition
		var at int64
		if err := rows.Scan(&t.From, &t.To, &t.Reason, &at); err != nil {
			return nil, fmt.Errorf("journal: transitions of %s: %w", id, err)
		}
		t.At = fromMS(at)
		ts = append(ts, t)
	}
	return ts, rows.Err()
}

// Attempt is one time a commit's request was about to leave the process.
type Attempt struct {
	N       int       `json:"n"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	Outcome string    `json:"outcome"`
	Detail  string    `json:"detail,omitempty"`
}

// Attempts returns the attempts of one operation, in order.
func (j *Journal) Attempts(ctx context.Context, id string) ([]Attempt, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT n, started_at, finished_at, outcome, detail FROM attempts WHERE operation_id = ? ORDER BY n", id)
	if err != nil {
		return nil, fmt.Errorf("journal: attempts of %s: %w", id, err)
	}
	defer rows.Close()
	var as []Attempt
	for rows.Next() {
		var a Attempt
		var s, e int64
		if err := rows.Scan(&a.N, &s, &e, &a.Outcome, &a.Detail); err != nil {
			return nil, fmt.Errorf("journal: attempts of %s: %w", id, err)
		}
		a.Started, a.Ended = fromMS(s), fromMS(e)
		as = append(as, a)
	}
	return as, rows.Err()
}

// SetResult records the last result of an operation without changing its state, for
// outcomes whose state moved with another record (an approval's decision).
func (j *Journal) SetResult(ctx context.Context, id string, r action.Result) error {
	return j.set(ctx, id, "result", mustJSON(r))
}

// SetEnvelope records where the vault note of an operation is.
func (j *Journal) SetEnvelope(ctx context.Context, id, path string) error {
	return j.set(ctx, id, "envelope", path)
}

func (j *Journal) set(ctx context.Context, id, col, v string) error {
	res, err := j.exec(ctx, durable, "UPDATE operations SET "+col+" = ?, updated_at = ? WHERE id = ?", v, ms(j.now()), id)
	if err != nil {
		return fmt.Errorf("journal: set %s of %s: %w", col, id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("journal: operation %s: %w", id, ErrNotFound)
	}
	return nil
}

// StartAttempt opens a new attempt on an operation that is committing, before the
// next part of a split text leaves the process. It returns ErrStateChanged when the
// operation is not committing.
func (j *Journal) StartAttempt(ctx context.Context, id, detail string) error {
	return j.tx(ctx, func(tx txn) error { return j.startAttempt(ctx, tx, id, detail) })
}

// Reattempt closes the open attempt of a committing operation with outcome and
// detail, and opens the next one with why, in one transaction: a state-setting
// commit repeated to settle an unknown outcome keeps both attempts, and what
// became of the first, in the audit log. ErrStateChanged when the operation is
// no longer committing.
func (j *Journal) Reattempt(ctx context.Context, id, outcome, detail, why string) error {
	return j.tx(ctx, func(tx txn) error {
		// The attempt closed is the operation's last until the next opens.
		if err := tx.lockOperation(ctx, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE attempts SET finished_at = ?, outcome = ?, detail = ?
			WHERE operation_id = ? AND n = (SELECT attempts FROM operations WHERE id = ?)`, ms(j.now()), outcome, detail, id, id)
		if err != nil {
			return fmt.Errorf("journal: finish attempt of %s: %w", id, err)
		}
		return j.startAttempt(ctx, tx, id, why)
	})
}

func (j *Journal) startAttempt(ctx context.Context, tx txn, id, detail string) error {
	res, err := tx.ExecContext(ctx, "UPDATE operations SET attempts = attempts + 1, updated_at = ? WHERE id = ? AND state = ?",
		ms(j.now()), id, Committing)
	if err != nil {
		return fmt.Errorf("journal: start attempt of %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return j.whyNotMoved(ctx, tx, id, Move{From: Committing, To: Committing})
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO attempts(operation_id, n, started_at, detail)
		SELECT id, attempts, CAST(? AS BIGINT), CAST(? AS TEXT) FROM operations WHERE id = ?`, ms(j.now()), detail, id)
	return err
}

// PartDelivered records that one more part of a committing operation was delivered,
// with the evidence so far, and closes the open attempt as committed.
func (j *Journal) PartDelivered(ctx context.Context, id string, partsDone int, ev action.Evidence) error {
	return j.tx(ctx, func(tx txn) error {
		now := ms(j.now())
		res, err := tx.ExecContext(ctx, "UPDATE operations SET parts_done = ?, evidence = ?, updated_at = ? WHERE id = ? AND state = ?",
			partsDone, mustJSON(ev), now, id, Committing)
		if err != nil {
			return fmt.Errorf("journal: part delivered of %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return j.whyNotMoved(ctx, tx, id, Move{From: Committing, To: Committing})
		}
		_, err = tx.ExecContext(ctx, `UPDATE attempts SET finished_at = ?, outcome = 'committed'
			WHERE operation_id = ? AND n = (SELECT attempts FROM operations WHERE id = ?)`, now, id, id)
		return err
	})
}

// insertID runs an insert into a table keyed by seq and returns the row's seq
// (SQLite's rowid): from the insert's result where the driver gives it, else
// RETURNING.
func insertID(ctx context.Context, tx txn, query string, args ...any) (int64, error) {
	if d := tx.Dialect(); !d.LastInsertID {
		var seq int64
		err := tx.QueryRowContext(ctx, query+" RETURNING "+d.Seq, args...).Scan(&seq)
		return seq, err
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}
