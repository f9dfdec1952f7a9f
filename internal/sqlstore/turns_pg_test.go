package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/internal/pgtest"
)

// In a burst of more writers than the pool has connections, the writes that
// wait are served in the order they came: the pool alone handed a freed
// connection to a waiter at random, and a write could lose to later ones
// again and again (a send's slowest writes several times its mean).
func TestWritesWaitingForAConnectionAreServedInTheOrderTheyCame(t *testing.T) {
	t.Parallel()
	url := pgtest.Fresh(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenPostgres(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Every connection is taken by a write that waits for a lock the test
	// holds, one lock each.
	other, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	const key = 0x7e57
	for i := range durableTurns {
		if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_lock($1, $2)", key, i); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	const late = 8 // writers that come after every turn is taken
	errs := make(chan error, durableTurns+late)
	for i := range durableTurns {
		wg.Go(func() {
			errs <- db.Write(ctx, Durable, func(tx *Tx) error {
				_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?, ?)", key, i)
				return err
			})
		})
	}
	q := db.turns[Durable]
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		all := q.free == 0
		q.mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writes holding the lock never took every turn")
		}
	}
	// Then writers come one after another, each once the one before waits.
	queued := make(chan struct{})
	q.mu.Lock()
	q.queued = func() { queued <- struct{}{} }
	q.mu.Unlock()
	var mu sync.Mutex
	var served []int
	var lates sync.WaitGroup
	for i := range late {
		lates.Go(func() {
			errs <- db.Write(ctx, Durable, func(tx *Tx) error {
				mu.Lock()
				served = append(served, i)
				mu.Unlock()
				_, err := tx.ExecContext(ctx, "SELECT 1")
				return err
			})
		})
		select {
		case <-queued:
		case <-ctx.Done():
			t.Fatalf("writer %d never queued", i)
		}
	}
	// One connection comes free, and the writers who waited take it one
	// after another.
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock($1, 0)", key); err != nil {
		t.Fatal(err)
	}
	lates.Wait()
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock_all()"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(served, want) {
		t.Errorf("the waiting writes were served in the order %v, want %v", served, want)
	}
}

// A write whose context ends while it waits for its turn leaves the queue,
// and the turn it was given meanwhile, if any, goes on: no turn is lost.
func TestAWriteThatStopsWaitingLosesNoTurn(t *testing.T) {
	t.Parallel()
	q := newTurns(1)
	if err := q.take(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan struct{}, 1)
	q.queued = func() { queued <- struct{}{} }
	done := make(chan error)
	go func() { done <- q.take(ctx) }()
	<-queued
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a take whose context ended got its turn")
	}
	q.give()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.take(ctx); err != nil {
		t.Errorf("the turn given back after a waiter left is lost: %v", err)
	}
}
