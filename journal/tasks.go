package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/policy"
)

// Task is one request of an operator with the policy snapshot it runs under and the
// budgets it has spent.
type Task struct {
	ID        string
	Requester int64
	Chat      string
	Summary   string
	// Origin names what started the task (e.g. "telegram:update:812"); a second task
	// with the same non-empty origin is refused with ErrDuplicate.
	Origin      string
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
		_, err = j.db.ExecContext(ctx, `INSERT INTO tasks(id, requester, chat, summary, origin, policy, created_at)
			VALUES(?, ?, ?, ?, ?, ?, ?)`, t.ID, t.Requester, t.Chat, t.Summary, t.Origin, snap, ms(t.Created))
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

// Task returns a task by id, or ErrNotFound.
func (j *Journal) Task(ctx context.Context, id string) (Task, error) {
	var t Task
	var snap string
	var waited, created int64
	err := j.db.QueryRowContext(ctx, `SELECT id, requester, chat, summary, origin, policy, retries_used, repairs_used, waited_ms, created_at
		FROM tasks WHERE id = ?`, id).Scan(&t.ID, &t.Requester, &t.Chat, &t.Summary, &t.Origin, &snap, &t.RetriesUsed, &t.RepairsUsed, &waited, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("journal: task %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("journal: task %s: %w", id, err)
	}
	t.Policy = new(policy.Policy)
	if err := json.Unmarshal([]byte(snap), t.Policy); err != nil {
		return t, fmt.Errorf("journal: task %s: policy snapshot: %w", id, err)
	}
	t.Waited, t.Created = time.Duration(waited)*time.Millisecond, fromMS(created)
	return t, nil
}

// SpendRetry takes one retry and wait of the task's budgets in one atomic step. It
// returns ErrRetryBudget or ErrWaitBudget, spending nothing, when either would be
// exceeded.
func (j *Journal) SpendRetry(ctx context.Context, taskID string, wait time.Duration) error {
	t, err := j.Task(ctx, taskID)
	if err != nil {
		return err
	}
	switch {
	case t.RetriesUsed >= t.Policy.RetryBudget:
		return fmt.Errorf("%w (%d of %d used)", ErrRetryBudget, t.RetriesUsed, t.Policy.RetryBudget)
	case t.Waited+wait > t.Policy.WaitBudget:
		return fmt.Errorf("%w (%s of %s used)", ErrWaitBudget, t.Waited.Round(time.Millisecond), t.Policy.WaitBudget)
	}
	return j.spend(ctx, `UPDATE tasks SET retries_used = retries_used + 1, waited_ms = waited_ms + ?
		WHERE id = ? AND retries_used = ? AND waited_ms = ?`, wait.Milliseconds(), taskID, t.RetriesUsed, t.Waited.Milliseconds())
}

// SpendRepair takes one repair of the task's budget, or returns ErrRepairBudget.
func (j *Journal) SpendRepair(ctx context.Context, taskID string) error {
	t, err := j.Task(ctx, taskID)
	if err != nil {
		return err
	}
	if t.RepairsUsed >= t.Policy.RepairBudget {
		return fmt.Errorf("%w (%d of %d used)", ErrRepairBudget, t.RepairsUsed, t.Policy.RepairBudget)
	}
	return j.spend(ctx, `UPDATE tasks SET repairs_used = repairs_used + 1 WHERE id = ? AND repairs_used = ?`, taskID, t.RepairsUsed)
}

// spend runs a compare-and-set update; losing the race to another spender is
// reported as ErrStateChanged so the caller can look again.
func (j *Journal) spend(ctx context.Context, query string, args ...any) error {
	res, err := j.db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("journal: spend budget: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("journal: spend budget: %w", ErrStateChanged)
	}
	return nil
}
