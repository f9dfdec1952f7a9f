package standin_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/countersign/countersign/telegram/standin"
)

// receiver is a webhook endpoint over real HTTP: it records the update ids it
// took (with the secret each came with) and answers 503 while down.
type receiver struct {
	ts *httptest.Server

	mu      sync.Mutex
	took    []int64
	secrets []string
	down    bool
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.down || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		r.took = append(r.took, standin.UpdateID(body))
		r.secrets = append(r.secrets, req.Header.Get("X-Telegram-Bot-Api-Secret-Token"))
	}))
	t.Cleanup(r.ts.Close)
	return r
}

func (r *receiver) ids() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.took)
}

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// deliverTo runs the webhook delivery to pick until the test ends.
func deliverTo(t *testing.T, srv *standin.Server, pick func() (string, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.DeliverWebhook(ctx, standin.PostWebhook(http.DefaultClient, pick)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("DeliverWebhook ended with %v, want context.Canceled", err)
		}
	})
}

func setWebhook(t *testing.T, srv *standin.Server, secret string) {
	t.Helper()
	if r := post(t, srv, "setWebhook", url.Values{"url": {"https://hook.example/telegram"}, "secret_token": {secret}}); !r.OK {
		t.Fatalf("setWebhook = %+v", r)
	}
}

func TestWebhookDeliversInOrderWithTheSecret(t *testing.T) {
	srv := newServer(t, standin.Options{})
	r := newReceiver(t)
	deliverTo(t, srv, func() (string, error) { return r.ts.URL + "/any/path", nil })
	first := srv.PushMessage(100, 100, "before the webhook")
	setWebhook(t, srv, "s3cret")
	second := srv.PushMessage(100, 100, "after")
	third := srv.PushMessage(100, 100, "/ops")
	waitFor(t, srv, "every update delivered", func(s *standin.Server) bool { return len(s.PendingUpdates()) == 0 })
	if got, want := r.ids(), []int64{first, second, third}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	for _, s := range r.secrets {
		if s != "s3cret" {
			t.Errorf("secret header %q, want s3cret", s)
		}
	}
	if r := post(t, srv, "getUpdates", nil); r.Status != http.StatusConflict {
		t.Errorf("getUpdates while the webhook delivers = %+v, want 409", r)
	}
}

// Telegram delivers again after a non-2xx answer or a refused connection, and
// holds back the updates behind the one that failed.
func TestWebhookRetriesUntilTaken(t *testing.T) {
	srv := newServer(t, standin.Options{})
	r := newReceiver(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // its port now refuses connections
	var mu sync.Mutex
	picks := 0
	deliverTo(t, srv, func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		picks++
		if picks == 1 {
			return deadURL, nil
		}
		return r.ts.URL, nil
	})
	r.setDown(true)
	setWebhook(t, srv, "s")
	first := srv.PushMessage(100, 100, "one")
	second := srv.PushMessage(100, 100, "two")
	waitFor(t, srv, "a refused connection and a 503", func(s *standin.Server) bool { return len(s.WebhookDeliveries()) >= 3 })
	if got := r.ids(); len(got) != 0 {
		t.Fatalf("taken while down: %v", got)
	}
	r.setDown(false)
	waitFor(t, srv, "both delivered", func(s *standin.Server) bool { return len(s.PendingUpdates()) == 0 })
	if got, want := r.ids(), []int64{first, second}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	var failed []string
	for _, d := range srv.WebhookDeliveries() {
		if d.Err != "" {
			if d.UpdateID != first {
				t.Errorf("update %d failed while %d was not yet taken", d.UpdateID, first)
			}
			failed = append(failed, d.Err)
		}
	}
	if len(failed) < 3 {
		t.Errorf("failed attempts %q, want a refused connection and 503s", failed)
	}
}

// A taken delivery whose answer is lost is delivered again; a delivery twice at
// once reaches the receiver twice; both reach it with the same update_id.
func TestWebhookFaultsDeliverAgain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault standin.WebhookAction
	}{
		{"reply lost", standin.WebhookReplyLost},
		{"twice at once", standin.WebhookTwiceAtOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{})
			r := newReceiver(t)
			deliverTo(t, srv, func() (string, error) { return r.ts.URL, nil })
			setWebhook(t, srv, "s")
			srv.InjectWebhook(standin.WebhookFault{Action: tc.fault})
			hit := srv.PushMessage(100, 100, "twice")
			after := srv.PushMessage(100, 100, "once")
			waitFor(t, srv, "both delivered", func(s *standin.Server) bool { return len(s.PendingUpdates()) == 0 })
			if got, want := r.ids(), []int64{hit, hit, after}; !slices.Equal(got, want) {
				t.Errorf("delivered %v, want %v", got, want)
			}
			var faulted []standin.WebhookDelivery
			for _, d := range srv.WebhookDeliveries() {
				if d.Fault != 0 {
					faulted = append(faulted, d)
				}
			}
			if len(faulted) != 1 || faulted[0].UpdateID != hit || faulted[0].Fault != tc.fault {
				t.Errorf("faulted deliveries %+v, want one %s of update %d", faulted, tc.fault, hit)
			}
		})
	}
}

// ClientURL tells apart the calls of processes that share one server.
func TestClientURLNamesTheCaller(t *testing.T) {
	srv := newServer(t, standin.Options{})
	resp, err := http.PostForm(srv.ClientURL("r2")+"/bot"+srv.Token()+"/getMe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeReply(t, resp); !r.OK {
		t.Fatalf("getMe under a client name = %+v", r)
	}
	post(t, srv, "getMe", nil)
	calls := srv.CallsTo("getMe")
	if len(calls) != 2 || calls[0].Client != "r2" || calls[1].Client != "" {
		t.Errorf("clients %+v, want r2 then none", calls)
	}
}
