package coord_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestATurnIsTakenOncePerInterval(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testATurnIsTakenOncePerInterval)
}

func testATurnIsTakenOncePerInterval(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, nil)
	other := open(t, name, nil) // another process on the same journal
	const work, every = "reminders:telegram", 24 * time.Hour
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if at, err := j.LastDone(ctx, work); err != nil || !at.IsZero() {
		t.Fatalf("LastDone before any turn = %v, %v; want the zero time", at, err)
	}
	// Two processes ask for the same interval at once: one takes it.
	var wg sync.WaitGroup
	took := make([]bool, 2)
	for i, jj := range []member{j, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := jj.TakePeriodicTurn(ctx, work, now.Add(-every), now)
			if err != nil {
				t.Error(err)
			}
			took[i] = ok
		}()
	}
	wg.Wait()
	if took[0] == took[1] {
		t.Fatalf("turns taken = %v, want exactly one", took)
	}
	if at, err := other.LastDone(ctx, work); err != nil || !at.Equal(now) {
		t.Errorf("LastDone = %v, %v; want %v", at, err, now)
	}
	later := now.Add(every - time.Minute)
	if ok, err := other.TakePeriodicTurn(ctx, work, later.Add(-every), later); err != nil || ok {
		t.Errorf("TakeTurn within the interval = %v, %v; want false", ok, err)
	}
	if ok, err := j.TakePeriodicTurn(ctx, "another work", later.Add(-every), later); err != nil || !ok {
		t.Errorf("TakeTurn of other work = %v, %v; want true: each work has its own turn", ok, err)
	}
	next := now.Add(every + time.Second)
	if ok, err := other.TakePeriodicTurn(ctx, work, next.Add(-every), next); err != nil || !ok {
		t.Errorf("TakeTurn after the interval = %v, %v; want true", ok, err)
	}
	if at, err := j.LastDone(ctx, work); err != nil || !at.Equal(next) {
		t.Errorf("LastDone = %v, %v; want the turn just taken, %v", at, err, next)
	}
}
