package telegram

import (
	"net/http"
)

// Counter is what the bot counts into: a prometheus.Counter satisfies it, and
// this package needs no metrics library to count.
type Counter interface {
	Add(float64)
}

// Counters are what the bot counts for its process's metrics. A nil counter
// counts nothing.
type Counters struct {
	// UpdatesTaken counts the updates this process stored fresh in the inbox (a
	// replay Telegram delivers again is not counted twice).
	UpdatesTaken Counter
	// TooManyRequests counts the Bot API's 429 answers to any method this
	// process called: sends, polls, cards and answers alike.
	TooManyRequests Counter
}

// taken counts n updates stored fresh.
func (c Counters) taken(n int) {
	if c.UpdatesTaken != nil && n > 0 {
		c.UpdatesTaken.Add(float64(n))
	}
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
	c    Counter
}

func (t count429) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.c.Add(1)
	}
	return resp, err
}
