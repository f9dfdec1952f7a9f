package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/policy"
)

// Task is one request of an operator with the policy snapshot it runs under and the
// budgets it has spent.
type Task struct {
	ID        string
	Requester policy.UserID
	Chat      string
	Summary   string
	// Origin names what started the task (e.g. "telegram:message:111:42"); a second task
	// with the same non-empty origin is refused with ErrDuplicate.
	Origin string
	// Surface is where the task's requests come from (telegram, console, ...).
	Surface     string
	Policy      *policy.Policy
	RetriesUsed int
	RepairsUsed int
	Waited      time.Duration
	Created     time.Time
}

// CreateTask stores a new task and returns it with its id and creation time set.
// The policy is stored as a snapshot: later edits of the file do not reach it.
func (j *Journal) CreateTask(ctx context.Context, t Task) (Task, error) {
	snap, err := json.Marshal(t.Policy)
	if err != nil {
		return t, fmt.Errorf("journal: snapshot policy: %w", err)
	}
	t.Created = j.now().UTC()
	for range 5 {
		t.ID = NewID("task")
		err = j.tx(ctx, func(tx txn) error { return insertTask(ctx, tx, t, snap) })
		if isUniqueIndex(err) {
			return t, fmt.Errorf("journal: task from %s: %w", t.Origin, ErrDuplicate)
		}
		if !isUnique(err) {
			break
		}
	}
	if err != nil {
		return t, fmt.Errorf("journal: create task: %w", err)
	}
	return t, nil
}

func insertTask(ctx context.Context, tx txn, t Task, snap []byte) error {
	return tx.Later(ctx, "insert task", `INSERT INTO tasks(id, requester, chat, summary, origin, surface, policy, created_at)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?)`, t.ID, t.Requester, t.Chat, keptText(t.Summary), keptText(t.Origin), t.Surface, snap, ms(t.Created))
}

// Task returns a task by id, or ErrNotFound.
func (j *Journal) Task(ctx context.Context, id string) (Task, error) {
	return j.task(ctx, "id", id)
}

// TaskByOrigin returns the task that origin started, or ErrNotFound: a replayed
// request finds the task it started before a crash, and continues it.
func (j *Journal) TaskByOrigin(ctx context.Context, origin string) (Task, error) {
	if origin == "" {
		return Task{}, fmt.Errorf("journal: task of no origin: %w", ErrNotFound)
	}
	return j.task(ctx, "origin", origin)
}

func (j *Journal) task(ctx context.Context, col, v string) (Task, error) {
	var t Task
	var snap string
	var waited, created int64
	err := j.db.QueryRowContext(ctx, `SELECT id, requester, chat, summary, origin, surface, policy, retries_used, repairs_used, waited_ms, created_at
		FROM tasks WHERE `+col+` = ?`, v).Scan(&t.ID, &t.Requester, &t.Chat, &t.Summary, &t.Origin, &t.Surface, &snap, &t.RetriesUsed, &t.RepairsUsed, &waited, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("journal: task %s: %w", v, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("journal: task %s: %w", v, err)
	}
	if t.Policy, err = snapshots.decode(snap); err != nil {
		return t, fmt.Errorf("journal: task %s: policy snapshot: %w", t.ID, err)
	}
	t.Waited, t.Created = time.Duration(waited)*time.Millisecond, fromMS(created)
	return t, nil
}

// snapshots holds the policy snapshots tasks were read with, decoded, by
// their bytes: the tasks of a process nearly all run under one policy, and a
// send reads its task twice (the tap, the commit), which decoded the same
// snapshot each time. A decoded snapshot is shared by every task read with the
// same bytes, so a Task's Policy is read-only: it is what the task started
// under, and nothing changes it.
var snapshots = snapshotCache{m: map[string]*policy.Policy{}}

// maxSnapshots bounds the snapshots kept: past it the cache starts afresh.
const maxSnapshots = 16

type snapshotCache struct {
	mu sync.Mutex
	m  map[string]*policy.Policy
}

// decode returns the policy snap holds.
func (c *snapshotCache) decode(snap string) (*policy.Policy, error) {
	c.mu.Lock()
	p := c.m[snap]
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p = new(policy.Policy)
	if err := json.Unmarshal([]byte(snap), p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxSnapshots {
		clear(c.m)
	}
	c.m[snap] = p
	return p, nil
}

// Spend is what one move costs its task's budgets (see Move.Spend).
type Spend struct {
	Retry  bool          // one automatic retry
	Wait   time.Duration // the wait before it
	Repair bool          // one repair
}

// spend takes s from the budgets of the task of operation id, inside the caller's
// transaction, or returns ErrRetryBudget, ErrWaitBudget or ErrRepairBudget when the
// task's policy snapshot does not allow it. The read that checks the budgets locks
// the task's row until the transaction ends (SQLite's single writer, PostgreSQL's
// row lock), so two moves of one task can never both spend the last retry.
func spend(ctx context.Context, tx txn, id string, s Spend) error {
	var taskID, snap string
	var retries, repairs int
	var waited int64
	err := tx.QueryRowContext(ctx, `SELECT t.id, t.policy, t.retries_used, t.repairs_used, t.waited_ms
		FROM tasks t JOIN operations o ON o.task_id = t.id WHERE o.id = ?`+tx.RowLock(" FOR UPDATE OF t"), id).Scan(&taskID, &snap, &retries, &repairs, &waited)
	if err != nil {
		return fmt.Errorf("budgets of %s: %w", id, err)
	}
	var p policy.Policy
	if err := json.Unmarshal([]byte(snap), &p); err != nil {
		return fmt.Errorf("task %s: policy snapshot: %w", taskID, err)
	}
	w := time.Duration(waited) * time.Millisecond
	switch {
	case s.Retry && retries >= p.RetryBudget:
		return &BudgetError{ErrRetryBudget, fmt.Sprintf("%d of %d used", retries, p.RetryBudget)}
	case s.Retry && w+s.Wait > p.WaitBudget:
		return &BudgetError{ErrWaitBudget, fmt.Sprintf("%s of %s used", w.Round(time.Millisecond), p.WaitBudget)}
	case s.Repair && repairs >= p.RepairBudget:
		return &BudgetError{ErrRepairBudget, fmt.Sprintf("%d of %d used", repairs, p.RepairBudget)}
	}
	_, err = tx.ExecContext(ctx, `UPDATE tasks SET retries_used = retries_used + ?, waited_ms = waited_ms + ?, repairs_used = repairs_used + ? WHERE id = ?`,
		b2i(s.Retry), s.Wait.Milliseconds(), b2i(s.Repair), taskID)
	return err
}

// BudgetError is a budget that cannot pay for a move: Budget is ErrRetryBudget,
// ErrWaitBudget or ErrRepairBudget, and Used says how much of it went.
type BudgetError struct {
	Budget error
	Used   string
}

func (e *BudgetError) Error() string { return fmt.Sprintf("%v (%s)", e.Budget, e.Used) }
func (e *BudgetError) Unwrap() error { return e.Budget }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
