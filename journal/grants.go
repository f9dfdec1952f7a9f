package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// A grant is an approver's explicit, journaled consent to more than one tap's
// worth of commits, never an implicit "allow for the session":
//
//   - GrantOperations approves, with one tap, the approvals of a card that
//     listed each operation and the hash of its payload: an approval not
//     waiting, or whose payload changed since the card, refuses the whole grant.
//   - GrantWindow approves, in the granter's name and without a tap, each
//     commit of one tool to one target until a time, or until revoked.
//
// A commit approved under a grant names it (Approval.Grant, and the reason of
// its move to approved).

// GrantKind is what a grant covers.
type GrantKind string

// The kinds of grant.
const (
	GrantOperations GrantKind = "operations"
	GrantWindow     GrantKind = "window"
)

// Errors of grants.
var (
	// ErrGrantEnded means the grant was revoked or its time is over.
	ErrGrantEnded = errors.New("grant no longer in force")
	// ErrNotCovered means the grant does not cover the approval: another
	// tool or target, an operation it does not list, or a payload changed since.
	ErrNotCovered = errors.New("not covered by the grant")
)

// Grant is one grant, as journaled.
type Grant struct {
	ID      string
	Kind    GrantKind
	By      policy.UserID // the granter: the approvals it gives are theirs
	Created time.Time
	// Until ends a window grant.
	Until time.Time
	// Tool and Target are what a window grant covers.
	Tool, Target string
	// Task and Items are what an operations grant approves.
	Task  string
	Items []GrantItem
	// RevokedBy and Revoked say who ended a grant before its time, and when.
	RevokedBy policy.UserID
	Revoked   time.Time
}

// GrantItem is one approval an operations grant approves: its operation and
// the hash of the payload the card showed. It is the audit trail's own type,
// so that a grant record's items are what the journal keeps.
type GrantItem = audit.GrantItem

// InForce reports whether a window grant approves commits at now.
func (g Grant) InForce(now time.Time) bool {
	return g.Kind == GrantWindow && g.Revoked.IsZero() && now.Before(g.Until)
}

// fact is the body of g's grant record.
func (g Grant) fact() audit.GrantFact {
	return audit.GrantFact{Grant: g.ID, Kind: string(g.Kind), By: int64(g.By), At: ms(g.Created), Until: ms(g.Until),
		Tool: g.Tool, Target: g.Target, Task: g.Task, Items: g.Items}
}

const grantColumns = `id, kind, granted_by, created_at, until_at, tool, target, task_id, items, revoked_by, revoked_at`

func scanGrant(row interface{ Scan(...any) error }) (Grant, error) {
	var g Grant
	var c, u, r int64
	var items string
	err := row.Scan(&g.ID, &g.Kind, &g.By, &c, &u, &g.Tool, &g.Target, &g.Task, &items, &g.RevokedBy, &r)
	g.Created, g.Until, g.Revoked = fromMS(c), fromMS(u), fromMS(r)
	if err == nil && items != "" {
		err = json.Unmarshal([]byte(items), &g.Items)
	}
	return g, err
}

func insertGrant(ctx context.Context, tx txn, g *Grant) error {
	items := ""
	if len(g.Items) > 0 {
		items = mustJSON(g.Items)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO grants(id, kind, granted_by, created_at, until_at, tool, target, task_id, items)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)`, g.ID, g.Kind, g.By, ms(g.Created), ms(g.Until), g.Tool, g.Target, g.Task, items)
	if err != nil {
		return fmt.Errorf("grant %s: %w", g.ID, err)
	}
	tx.audit(audit.Grant, "", g.ID, g.Created, g.fact())
	return nil
}

// GrantWindow journals a window grant: by approves commits of tool to target
// until until. It returns the grant with its id.
func (j *Journal) GrantWindow(ctx context.Context, by policy.UserID, tool, target string, until time.Time) (Grant, error) {
	g := Grant{ID: NewID("gr"), Kind: GrantWindow, By: by, Created: j.now().UTC(), Until: until.UTC(), Tool: tool, Target: target}
	if !g.Created.Before(g.Until) {
		return g, fmt.Errorf("journal: grant until %s: the time is past", until.Format(time.RFC3339))
	}
	if err := j.tx(ctx, func(tx txn) error { return insertGrant(ctx, tx, &g) }); err != nil {
		return g, fmt.Errorf("journal: %w", err)
	}
	return g, nil
}

// GrantApprovals journals an operations grant by by over items (approvals of
// task) and approves each in by's name, all in one transaction: when one is no
// longer waiting, or its payload is not the one listed, nothing is recorded and
// the error says which (ErrDecided, ErrNotCovered, ErrVoted, ErrExpired). It
// returns the approvals as decided (one still pending when it needs more
// approvers than the granter).
func (j *Journal) GrantApprovals(ctx context.Context, by policy.UserID, task string, items []GrantItem) (Grant, []Approval, error) {
	g := Grant{ID: NewID("gr"), Kind: GrantOperations, By: by, Created: j.now().UTC(), Task: task, Items: items}
	var out []Approval
	err := j.tx(ctx, func(tx txn) error {
		out = out[:0]
		if err := lockApprovals(ctx, tx, items); err != nil {
			return err
		}
		if err := insertGrant(ctx, tx, &g); err != nil {
			return err
		}
		for _, it := range items {
			expired := false
			var refused error // a grant gives no code: an approval that asks one refuses it
			a, err := j.decideIn(ctx, tx, it.Approval, Ballot{Decision: DecideApprove, By: by, Grant: g.ID}, &expired, &refused)
			if err == nil && expired {
				err = ErrExpired
			}
			if err != nil {
				return fmt.Errorf("%s (%s): %w", it.Operation, it.Approval, err)
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return g, nil, fmt.Errorf("journal: grant: %w", err)
	}
	return g, out, nil
}

// lockApprovals locks, on PostgreSQL, the rows of the approvals items name, in
// the order of their ids, until tx ends: two grants over some of the same
// approvals, listed in other orders, wait for each other instead of each
// locking one the other needs.
func lockApprovals(ctx context.Context, tx txn, items []GrantItem) error {
	if !tx.Dialect().SideBySide || len(items) < 2 {
		return nil
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.Approval
	}
	slices.Sort(ids)
	rows, err := tx.QueryContext(ctx, "SELECT id FROM approvals WHERE id = ANY(CAST(? AS TEXT[])) ORDER BY id FOR UPDATE", ids)
	if err != nil {
		return fmt.Errorf("lock the approvals of the grant: %w", err)
	}
	return rows.Close()
}

// grantCovers checks, in tx, that grant id is in force at now and covers a. It
// holds the grant's row (shared) until tx ends, so that a revocation waits for
// the approvals given under the grant before it, and they for it.
func (j *Journal) grantCovers(ctx context.Context, tx txn, id string, a Approval, now time.Time) error {
	g, err := scanGrant(tx.QueryRowContext(ctx, "SELECT "+grantColumns+" FROM grants WHERE id = ?"+tx.RowLock(" FOR SHARE"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("grant %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("grant %s: %w", id, err)
	}
	switch g.Kind {
	case GrantOperations:
		if !slices.Contains(g.Items, GrantItem{Approval: a.ID, Operation: a.OperationID, PayloadSHA256: a.PayloadSHA256}) {
			return fmt.Errorf("grant %s, approval %s: %w", id, a.ID, ErrNotCovered)
		}
		return nil
	case GrantWindow:
		if !g.InForce(now) {
			return fmt.Errorf("grant %s: %w", id, ErrGrantEnded)
		}
		var tool, payload string
		if err := tx.QueryRowContext(ctx, "SELECT tool, payload FROM operations WHERE id = ?", a.OperationID).Scan(&tool, &payload); err != nil {
			return fmt.Errorf("grant %s, operation %s: %w", id, a.OperationID, err)
		}
		var p action.Payload
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			return fmt.Errorf("grant %s, operation %s: %w", id, a.OperationID, err)
		}
		if tool != g.Tool || p.Target != g.Target {
			return fmt.Errorf("grant %s covers %s to %s, not %s to %s: %w", id, g.Tool, g.Target, tool, p.Target, ErrNotCovered)
		}
		return nil
	}
	return fmt.Errorf("grant %s of kind %q: %w", id, g.Kind, ErrNotCovered)
}

// RevokeGrant ends window grant id now, in by's name. A grant already ended
// returns ErrGrantEnded with the grant as it is: of two revocations at once, one
// ends it.
func (j *Journal) RevokeGrant(ctx context.Context, id string, by policy.UserID) (Grant, error) {
	var g Grant
	err := j.tx(ctx, func(tx txn) error {
		var err error
		g, err = scanGrant(tx.QueryRowContext(ctx, "SELECT "+grantColumns+" FROM grants WHERE id = ?"+tx.RowLock(" FOR UPDATE"), id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("grant %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		now := j.now().UTC()
		if !g.InForce(now) {
			return ErrGrantEnded
		}
		res, err := tx.ExecContext(ctx, "UPDATE grants SET revoked_by = ?, revoked_at = ? WHERE id = ? AND revoked_at = 0", by, ms(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return ErrGrantEnded
		}
		g.RevokedBy, g.Revoked = by, now
		tx.audit(audit.Revoke, "", g.ID, now, audit.GrantFact{Grant: g.ID, By: int64(g.By), At: ms(now), RevokedBy: int64(by)})
		return nil
	})
	if errors.Is(err, ErrGrantEnded) {
		return g, err
	}
	if err != nil {
		return g, fmt.Errorf("journal: revoke %s: %w", id, err)
	}
	return g, nil
}

// Grant returns grant id, or ErrNotFound.
func (j *Journal) Grant(ctx context.Context, id string) (Grant, error) {
	g, err := scanGrant(j.db.QueryRowContext(ctx, "SELECT "+grantColumns+" FROM grants WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return g, fmt.Errorf("journal: grant %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return g, fmt.Errorf("journal: grant %s: %w", id, err)
	}
	return g, nil
}

// WindowGrants returns the window grants in force at now, newest first.
func (j *Journal) WindowGrants(ctx context.Context, now time.Time) ([]Grant, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT "+grantColumns+" FROM grants WHERE kind = ? AND revoked_at = 0 AND until_at > ? ORDER BY created_at DESC, id",
		GrantWindow, ms(now))
	if err != nil {
		return nil, fmt.Errorf("journal: grants: %w", err)
	}
	defer rows.Close()
	var gs []Grant
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: grants: %w", err)
		}
		gs = append(gs, g)
	}
	return gs, rows.Err()
}

// WindowGrantFor returns the newest window grant in force at now that covers
// tool to target (of two made at once, the first by id), and whether there is
// one. Every send that may go under a grant asks, and most often there is
// none: the newest is picked here rather than by the statement, whose sorter
// would cost more than the read.
func (j *Journal) WindowGrantFor(ctx context.Context, tool, target string, now time.Time) (Grant, bool, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT "+grantColumns+` FROM grants
		WHERE kind = ? AND tool = ? AND target = ? AND revoked_at = 0 AND until_at > ?`,
		GrantWindow, tool, target, ms(now))
	if err != nil {
		return Grant{}, false, fmt.Errorf("journal: grant for %s to %s: %w", tool, target, err)
	}
	defer rows.Close()
	var newest Grant
	found := false
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return Grant{}, false, fmt.Errorf("journal: grant for %s to %s: %w", tool, target, err)
		}
		if !found || g.Created.After(newest.Created) || g.Created.Equal(newest.Created) && g.ID < newest.ID {
			newest, found = g, true
		}
	}
	if err := rows.Err(); err != nil {
		return Grant{}, false, fmt.Errorf("journal: grant for %s to %s: %w", tool, target, err)
	}
	return newest, found, nil
}
