package operator

import (
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

// An approval is near its expiry within a quarter of its time to live, at most
// an hour before it: when its reminder comes.
func TestNearExpiry(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		ttl, age time.Duration
		want     bool
	}{
		{"fresh, a day to live", 24 * time.Hour, time.Minute, false},
		{"a day to live, an hour and a minute left", 24 * time.Hour, 22*time.Hour + 59*time.Minute, false},
		{"a day to live, an hour left", 24 * time.Hour, 23 * time.Hour, true},
		{"ten minutes to live, three left", 10 * time.Minute, 7 * time.Minute, false},
		{"ten minutes to live, two and a half left", 10 * time.Minute, 7*time.Minute + 30*time.Second, true},
		{"past its expiry", time.Hour, 2 * time.Hour, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := journal.Approval{Created: created, Expires: created.Add(c.ttl)}
			if got := nearExpiry(a, created.Add(c.age)); got != c.want {
				t.Errorf("nearExpiry(ttl %s, at %s) = %v, want %v", c.ttl, c.age, got, c.want)
			}
		})
	}
}
