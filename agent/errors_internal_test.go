package agent

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 2, 15, 14, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"ms first", http.Header{"Retry-After-Ms": {"300"}, "Retry-After": {"16"}}, 300 * time.Millisecond},
		{"seconds", http.Header{"Retry-After": {"16"}}, 16 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {"Mon, 02 Jun 2025 15:15:48 GMT"}}, 108 * time.Second},
		{"date in the past", http.Header{"Retry-After": {"Mon, 02 Jun 2025 15:00:00 GMT"}}, 0},
		{"absent", http.Header{}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.header, now); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
