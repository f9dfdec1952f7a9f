package telegram

import (
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

func TestStrangersAreRememberedBoundedly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var s strangers
	if !s.first(1, now) || s.first(1, now.Add(59*time.Minute)) {
		t.Fatal("a stranger is told once, then not again within the hour")
	}
	if !s.first(1, now.Add(time.Hour)) {
		t.Error("a stranger is not told again after the hour")
	}
	for u := range policy.UserID(maxStrangers - 1) {
		s.first(1000+u, now.Add(time.Hour))
	}
	if len(s.told) != maxStrangers {
		t.Fatalf("remembered %d, want %d", len(s.told), maxStrangers)
	}
	if s.first(2, now.Add(90*time.Minute)) {
		t.Error("a new stranger was told while the memory is full of recent ones")
	}
	if len(s.told) != maxStrangers {
		t.Errorf("remembered %d, want no more than %d", len(s.told), maxStrangers)
	}
	if !s.first(2, now.Add(2*time.Hour)) || len(s.told) != 1 {
		t.Errorf("after the hour: %d remembered, want only the new stranger", len(s.told))
	}
}
