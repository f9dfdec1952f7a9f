package journal

import (
	"context"
	"fmt"
	"slices"
)

// States returns every state an operation can be in, sorted by name.
func States() []State {
	var all []State
	for from, tos := range edges {
		if from != "" {
			all = append(all, from)
		}
		all = append(all, tos...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// CountByState returns how many operations are in each state, in one query; a
// state no operation is in is absent.
func (j *Journal) CountByState(ctx context.Context) (map[State]int, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT state, count(*) FROM operations GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("journal: count by state: %w", err)
	}
	defer rows.Close()
	counts := map[State]int{}
	for rows.Next() {
		var s State
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("journal: count by state: %w", err)
		}
		counts[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("journal: count by state: %w", err)
	}
	return counts, nil
}

// Ping makes a trivial query, to tell whether the journal answers: a readiness
// check. Its error may name the database's host, never a password.
func (j *Journal) Ping(ctx context.Context) error {
	var one int
	if err := j.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("journal: ping: %w", err)
	}
	return nil
}
