package telegram_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestWebhookChecksTheSecretAndHandlesUpdates(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-header_value"
	r := newRig(t, withWebhook(&telegram.Webhook{URL: "https://bot.example.org/hook", Secret: secret, Listener: ln}))
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	if got := r.srv.Webhook(); got.SecretToken != secret {
		t.Errorf("registered secret = %q, want %q", got.SecretToken, secret)
	}
	post := func(secretHeader, body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader(body))
		if secretHeader != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secretHeader)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	update := fmt.Sprintf(`{"update_id":5001,"message":{"message_id":1,"date":1,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":"/ops"}}`, alice, alice)
	for _, tt := range []struct {
		name, secret, body string
		want               int
	}{
		{"no secret", "", update, http.StatusUnauthorized},
		{"wrong secret", "guess", update, http.StatusUnauthorized},
		{"not an update", secret, `{"hello":1}`, http.StatusBadRequest},
		{"update", secret, update, http.StatusOK},
		{"same update again", secret, update, http.StatusOK},
	} {
		if got := post(tt.secret, tt.body); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	r.replyContaining(alice, "No operations yet")
	if n := len(r.srv.Messages(alice)); n != 1 {
		t.Errorf("replies = %d, want 1 (the repeated update is handled once)", n)
	}
}
