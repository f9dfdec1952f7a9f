package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/journal"
)

// Webhook receives updates over HTTP instead of long polling. Telegram calls URL
// (HTTPS, ports 443, 80, 88 or 8443); Listen is where this process serves, usually
// behind a TLS-terminating proxy. Secret is sent by Telegram in every request's
// X-Telegram-Bot-Api-Secret-Token header; a request without it is refused.
type Webhook struct {
	Listen string
	URL    string
	Secret string
	// Listener, when set, is served instead of listening on Listen.
	Listener net.Listener
}

// serveWebhook registers the webhook and serves it until ctx ends.
func (t *Bot) serveWebhook(ctx context.Context) error {
	w := t.opts.Webhook
	_, err := t.api.SetWebhook(ctx, &bot.SetWebhookParams{URL: w.URL, SecretToken: w.Secret,
		AllowedUpdates: []string{"message", "callback_query"}})
	if err != nil {
		return errors.New("telegram: setWebhook: " + t.redact(err.Error()))
	}
	ln := w.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", w.Listen); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: t.WebhookHandler(ctx), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	t.log.Info("webhook serving", "listen", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WebhookHandler checks the secret header, stores the update in the inbox and only
// then answers 200, so that Telegram delivers again whatever was not stored.
func (t *Bot) WebhookHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(got), []byte(t.opts.Webhook.Secret)) != 1 {
			http.Error(w, "forbidden", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var head struct {
			UpdateID int64 `json:"update_id"`
		}
		if err != nil || json.Unmarshal(body, &head) != nil || head.UpdateID == 0 {
			http.Error(w, "not an update", http.StatusBadRequest)
			return
		}
		if _, err := t.accept(ctx, []journal.InboxItem{{UpdateID: head.UpdateID, Body: body}}, 0); err != nil {
			t.log.Error("update not stored; Telegram will deliver it again", "update", head.UpdateID, "err", err)
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
