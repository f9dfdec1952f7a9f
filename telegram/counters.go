package telegram

import (
	"net/http"

	"github.com/countersign/countersign/internal/metrics"
)

// Counters are what the bot counts for its process's metrics. A nil counter
// counts nothing.
type Counters struct {
	// UpdatesTaken counts the updates this process stored fresh in the inbox (a
	// replay Telegram delivers again is not counted twice).
	UpdatesTaken *metrics.Counter
	// TooManyRequests counts the Bot API's 429 answers to any method this
	// process called: sends, polls, cards and answers alike.
	TooManyRequests *metrics.Counter
}

// roundTripper counts the Bot API's 429 answers as they pass through next.
func (c Counters) roundTripper(next http.RoundTripper) http.RoundTripper {
	if c.TooManyRequests == nil {
		return next
	}
	return count429{next: next, c: c.TooManyRequests}
}

type count429 struct {
	next http.RoundTripper
	c    *metrics.Counter
}

func (t count429) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.c.Inc()
	}
	return resp, err
}
