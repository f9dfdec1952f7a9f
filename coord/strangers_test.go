package coord_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/policy"
)

// markStranger marks user for j or fails the test; ok reports whether j won.
func markStranger(t *testing.T, j member, user int64) (coord.StrangerMark, bool) {
	t.Helper()
	m, ok, err := j.MarkStranger(context.Background(), "telegram", policy.UserID(user), time.Hour)
	if err != nil {
		t.Fatalf("MarkStranger(%d) as %s: %v", user, j.Replica(), err)
	}
	return m, ok
}

// Among replicas a stranger is told once per silence: the first replica to mark
// them tells them, the others not, until the silence has passed. A mark whose
// notice did not go is given back by its holder only.
func TestAStrangerIsMarkedOncePerSilenceAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAStrangerIsMarkedOncePerSilenceAcrossReplicas)
}

func testAStrangerIsMarkedOncePerSilenceAcrossReplicas(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	const user = 5000
	first, ok := markStranger(t, r1, user)
	if !ok {
		t.Fatal("r1: the first mark of a stranger was not won")
	}
	if _, ok := markStranger(t, r2, user); ok {
		t.Fatal("r2 won the mark of a stranger r1 told a moment ago")
	}
	if _, ok := markStranger(t, r2, user+1); !ok {
		t.Error("r2: another stranger's first mark was not won")
	}
	c.Add(59 * time.Minute)
	if _, ok := markStranger(t, r1, user); ok {
		t.Fatal("r1 won a mark again within the silence")
	}
	c.Add(time.Minute)
	second, ok := markStranger(t, r2, user)
	if !ok {
		t.Fatal("r2: no mark once the silence had passed")
	}
	// r1's old mark is no longer the stranger's: giving it back keeps r2's.
	if gave, err := r1.UnmarkStranger(ctx, first); err != nil || gave {
		t.Fatalf("r1 gave back an outdated mark: %v, %v; want false", gave, err)
	}
	if _, ok := markStranger(t, r1, user); ok {
		t.Fatal("r2's mark was lost to r1's outdated give-back")
	}
	if gave, err := r2.UnmarkStranger(ctx, second); err != nil || !gave {
		t.Fatalf("r2 could not give back its mark: %v, %v", gave, err)
	}
	if _, ok := markStranger(t, r1, user); !ok {
		t.Error("a mark given back was not won again")
	}
}

// Of replicas that mark one stranger at once, exactly one wins.
func TestRacingReplicasMarkAStrangerOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		c := newClock()
		js := []member{replica(t, name, "r1", c), replica(t, name, "r2", c), replica(t, name, "r3", c)}
		var wg sync.WaitGroup
		won := make(chan string, 3*len(js))
		for _, j := range js {
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, ok, err := j.MarkStranger(context.Background(), "telegram", 7000, time.Hour); err != nil {
						t.Errorf("MarkStranger as %s: %v", j.Replica(), err)
					} else if ok {
						won <- j.Replica()
					}
				}()
			}
		}
		wg.Wait()
		close(won)
		var winners []string
		for r := range won {
			winners = append(winners, r)
		}
		if len(winners) != 1 {
			t.Errorf("winners %v, want exactly one", winners)
		}
	})
}

// Pruning forgets the marks older than its age, and only those.
func TestStrangersArePruned(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		c := newClock()
		r1 := replica(t, name, "r1", c)
		markStranger(t, r1, 1)
		c.Add(2 * time.Hour)
		markStranger(t, r1, 2)
		n, err := r1.PruneStrangers(ctx, time.Hour)
		if err != nil || n != 1 {
			t.Fatalf("PruneStrangers = %d, %v; want 1 pruned", n, err)
		}
		if _, ok := markStranger(t, r1, 2); ok {
			t.Error("a recent mark was pruned")
		}
		if _, ok := markStranger(t, r1, 1); !ok {
			t.Error("a pruned stranger was not marked afresh")
		}
	})
}
