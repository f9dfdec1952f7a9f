package telegram

import (
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/httpserve"
)

// A webhook configured with no timeouts is served with the defaults, every one
// of them set: a zero would let a client hold a connection forever.
func TestTheWebhookServerHasTheDefaultLimits(t *testing.T) {
	srv := webhookServer(Webhook{}.withDefaults(), http.NotFoundHandler(), nil, nil)
	for _, tt := range []struct {
		name      string
		got, want time.Duration
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout, 5 * time.Second},
		{"ReadTimeout", srv.ReadTimeout, 10 * time.Second},
		{"WriteTimeout", srv.WriteTimeout, 30 * time.Second},
		{"IdleTimeout", srv.IdleTimeout, 60 * time.Second},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	if got, want := srv.MaxHeaderBytes, httpserve.Default.MaxHeaderBytes; got != want || got == 0 {
		t.Errorf("MaxHeaderBytes = %d, want %d", got, want)
	}
	if got := (Webhook{}.withDefaults()).Timeouts.Busy; got != time.Second {
		t.Errorf("Busy = %s, want 1s", got)
	}
}
