package telegram

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A webhook configured with no timeouts is served with the defaults, every one
// of them set: a zero would let a client hold a connection forever.
func TestTheWebhookServerHasTheDefaultLimits(t *testing.T) {
	t.Parallel()
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

// A bot made with a webhook whose timeouts are left zero, or some of them,
// serves it with the defaults in their place, whatever else the webhook sets
// (a configuration always names its connections): the defaults are filled
// where the bot is made, not only where a test asks for them.
func TestABotsWebhookTakesTheDefaultsForItsZeroTimeouts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: replicaToken})
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	set := WebhookTimeouts{Write: 7 * time.Second}
	for _, tt := range []struct {
		name            string
		connections     int
		wantConnections int
	}{
		{"connections left zero", 0, 40},
		{"connections set", 10, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &Webhook{URL: "https://bot.example.org/hook", Timeouts: set, MaxConnections: tt.connections}
			b, err := New(ctx, j, Options{Token: replicaToken, APIURL: srv.URL(), Webhook: w})
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultWebhookTimeouts
			want.Write = set.Write
			if got := b.opts.Webhook.Timeouts; got != want {
				t.Errorf("the bot's webhook timeouts = %+v, want %+v", got, want)
			}
			if got := b.opts.Webhook.MaxConnections; got != tt.wantConnections {
				t.Errorf("the bot's webhook MaxConnections = %d, want %d", got, tt.wantConnections)
			}
		})
	}
}
