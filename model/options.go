package model

import (
	"net/http"
	"time"
)

// DefaultRequestTimeout bounds one request when WithRequestTimeout is not given.
const DefaultRequestTimeout = 2 * time.Minute

// Option configures a provider.
type Option func(*options)

type options struct {
	timeout time.Duration
	client  *http.Client
	now     func() time.Time
}

// WithRequestTimeout bounds each request; a request that times out is a
// *ConnectionError. d <= 0 keeps DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

func newOptions(opts []Option) options {
	o := options{timeout: DefaultRequestTimeout, client: &http.Client{}, now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	o.client = watching(o.client)
	return o
}
