package model

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 2, 15, 14, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		named  bool
	}{
		{"ms first", http.Header{"Retry-After-Ms": {"300"}, "Retry-After": {"16"}}, 300 * time.Millisecond, true},
		{"seconds", http.Header{"Retry-After": {"16"}}, 16 * time.Second, true},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{"http date", http.Header{"Retry-After": {"Mon, 02 Jun 2025 15:15:48 GMT"}}, 108 * time.Second, true},
		{"date in the past: now", http.Header{"Retry-After": {"Mon, 02 Jun 2025 15:00:00 GMT"}}, 0, true},
		{"zero: now", http.Header{"Retry-After": {"0"}}, 0, true},
		{"zero ms: now", http.Header{"Retry-After-Ms": {"0"}, "Retry-After": {"3"}}, 0, true},
		{"absent", http.Header{}, 0, false},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, named := WaitAsked(tt.header, now); got != tt.want || named != tt.named {
				t.Errorf("got %s (named %v), want %s (named %v)", got, named, tt.want, tt.named)
			}
		})
	}
}
