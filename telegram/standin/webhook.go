package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Deliver hands one update to whatever stands behind the webhook: update is the
// JSON Telegram posts, secret the secret_token setWebhook set. It returns nil
// only when the receiver took the update (a 2xx answer); on any error Telegram
// delivers the update again.
type Deliver func(ctx context.Context, update []byte, secret string) error

// WebhookAction is what a webhook fault does to a delivery.
type WebhookAction int

const (
	// WebhookReplyLost delivers the update and loses the receiver's answer:
	// the update was taken, Telegram did not hear so, and delivers it again.
	// It waits for a delivery that was taken.
	WebhookReplyLost WebhookAction = iota + 1
	// WebhookTwiceAtOnce delivers the update twice at the same time, as two
	// webhook connections of Telegram's may; it is taken when either took it.
	WebhookTwiceAtOnce
)

var webhookActionNames = [...]string{"none", "reply-lost", "twice-at-once"}

func (a WebhookAction) String() string {
	if a < 0 || int(a) >= len(webhookActionNames) {
		return "unknown"
	}
	return webhookActionNames[a]
}

// WebhookFault is a misbehaviour of the webhook delivery, for the next Count
// deliveries it applies to (0 means one).
type WebhookFault struct {
	Action WebhookAction
	Count  int
}

// WebhookDelivery records one attempt to deliver an update to the webhook.
type WebhookDelivery struct {
	UpdateID int64
	Time     time.Time // when the attempt began, by the server clock
	// Err is why the attempt failed, "" when the receiver took the update.
	Err string
	// Fault is the webhook fault applied, 0 when none was.
	Fault WebhookAction
}

// webhookBackoff bounds the wait between two attempts on one update: Telegram
// waits longer, a test has no time for it.
var webhookBackoff = struct{ first, max time.Duration }{50 * time.Millisecond, time.Second}

// webhookState is the delivery side of a set webhook.
type webhookState struct {
	faults     []WebhookFault
	deliveries []WebhookDelivery
}

// InjectWebhook arms f for the next deliveries to the webhook.
func (s *Server) InjectWebhook(f WebhookFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.Count = max(f.Count, 1)
	s.hook.faults = append(s.hook.faults, f)
}

// WebhookDeliveries returns every attempt made to deliver an update to the
// webhook, in order.
func (s *Server) WebhookDeliveries() []WebhookDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hook.deliveries)
}

// DeliverWebhook delivers updates through deliver while a webhook is set, as
// Telegram does: one at a time, in the order they were queued, each until it
// is taken, after a short backoff that grows on every failure. An update taken
// is confirmed (it leaves PendingUpdates); updates pushed while no webhook is
// set wait for one, and getUpdates answers 409 while one is. Run one at a time,
// as Telegram delivers one bot's updates. It returns when ctx ends (ctx.Err())
// or the server closes (ErrClosed).
func (s *Server) DeliverWebhook(ctx context.Context, deliver Deliver) error {
	wait := webhookBackoff.first
	for {
		u, secret, changed, ok := s.nextForWebhook()
		if !ok {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			case <-s.done:
				return ErrClosed
			}
		}
		if s.deliverOnce(ctx, deliver, u, secret) {
			wait = webhookBackoff.first
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.done:
			t.Stop()
			return ErrClosed
		}
		wait = min(2*wait, webhookBackoff.max)
	}
}

// nextForWebhook returns the first update to deliver and the secret, or ok
// false and a channel closed on the next change when there is none (no webhook,
// or nothing queued).
func (s *Server) nextForWebhook() (queuedUpdate, string, chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.webhook.URL == "" || len(s.queue.deliverable(1, s.now())) == 0 {
		return queuedUpdate{}, "", s.changed, false
	}
	return s.queue.pending[0], s.webhook.SecretToken, nil, true
}

// deliverOnce makes one attempt on u, with the fault armed, if any, and
// confirms u when it was taken. It reports whether it was.
func (s *Server) deliverOnce(ctx context.Context, deliver Deliver, u queuedUpdate, secret string) bool {
	s.mu.Lock()
	var action WebhookAction
	if len(s.hook.faults) > 0 {
		action = s.hook.faults[0].Action
	}
	began := s.now()
	s.mu.Unlock()
	var err error
	switch action {
	case WebhookTwiceAtOnce:
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = deliver(ctx, u.raw, secret) })
		}
		wg.Wait()
		if errs[0] != nil && errs[1] != nil {
			err = errors.Join(errs...)
		}
	default:
		err = deliver(ctx, u.raw, secret)
	}
	taken := err == nil
	s.mu.Lock()
	defer s.mu.Unlock()
	applied := action == WebhookTwiceAtOnce || (action == WebhookReplyLost && taken)
	switch {
	case applied && action == WebhookReplyLost:
		taken, err = false, errors.New("taken, and the answer was lost")
	case !applied:
		action = 0
	}
	if applied {
		if s.hook.faults[0].Count--; s.hook.faults[0].Count == 0 {
			s.hook.faults = s.hook.faults[1:]
		}
	}
	d := WebhookDelivery{UpdateID: u.id, Time: began, Fault: action}
	if err != nil {
		d.Err = err.Error()
	}
	s.hook.deliveries = append(s.hook.deliveries, d)
	if taken {
		s.queue.pending = slices.DeleteFunc(s.queue.pending, func(q queuedUpdate) bool { return q.id == u.id })
	}
	s.notifyLocked()
	return taken
}

// PostWebhook is a Deliver that POSTs each update, as Telegram does (a JSON body,
// the secret in X-Telegram-Bot-Api-Secret-Token), to the URL pick returns for it:
// a load balancer choosing one of several receivers. An error from pick, a
// connection that fails, an answer that is not 2xx, or no answer within 10 s is
// an error, and the update is delivered again.
func PostWebhook(client *http.Client, pick func() (string, error)) Deliver {
	return func(ctx context.Context, update []byte, secret string) error {
		url, err := pick()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(update))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return &WebhookError{Status: resp.StatusCode}
		}
		return nil
	}
}

// WebhookError is a receiver's answer that is not 2xx.
type WebhookError struct{ Status int }

func (e *WebhookError) Error() string {
	return fmt.Sprintf("webhook answered %d %s", e.Status, http.StatusText(e.Status))
}

// UpdateID reads the update_id of an update as Deliver gets it.
func UpdateID(update []byte) int64 {
	var head struct {
		UpdateID int64 `json:"update_id"`
	}
	json.Unmarshal(update, &head)
	return head.UpdateID
}
