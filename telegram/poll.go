package telegram

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/secret"
)

// allowedUpdates are the update kinds the bot handles.
const allowedUpdates = `["message","callback_query"]`

// apiReply is the Bot API's answer envelope.
type apiReply struct {
	OK          bool              `json:"ok"`
	Result      []json.RawMessage `json:"result"`
	ErrorCode   int               `json:"error_code"`
	Description string            `json:"description"`
	Parameters  struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// poll receives updates by long polling until ctx ends. Each batch is stored in the
// journal's inbox before the next request confirms it to Telegram, so a crash
// between the two loses nothing. The first request carries no offset: Telegram then
// returns what it still holds unconfirmed, and the inbox drops what it already has.
// So does every request after six quiet days, because Telegram may then number
// updates afresh, below the last one seen; and the next offset always follows the
// batch Telegram returned, never an older, higher mark, which would confirm the
// renumbered updates unread. 401 and 409 end it; 429 waits retry_after; other
// failures back off from 1 s to 30 s.
func (t *Bot) poll(ctx context.Context) error {
	var last int64
	now := t.opts.Clock
	lastSeen := now()
	wait := time.Second
	for ctx.Err() == nil {
		offset := last + 1
		if last == 0 || now().Sub(lastSeen) > 6*24*time.Hour {
			offset = 0
		}
		items, err := t.getUpdates(ctx, offset)
		var delay time.Duration
		var ra *retryAfter
		switch {
		case errors.Is(err, ErrTokenRejected), errors.Is(err, ErrConflict):
			return err
		case errors.As(err, &ra):
			delay = ra.d
		case err != nil:
			if ctx.Err() == nil {
				t.log.Warn("getUpdates failed; trying again", "in", wait, "err", err)
			}
			delay, wait = wait, min(2*wait, 30*time.Second)
		case len(items) == 0:
			wait = time.Second
		default:
			wait = time.Second
			lastSeen = now()
			if err := t.accept(ctx, items, time.Now()); err != nil {
				t.log.Error("updates not stored; asking for them again", "err", err)
				delay = time.Second
				break // not stored: the same offset asks for them again
			}
			last = slices.MaxFunc(items, func(a, b journal.InboxItem) int { return cmp.Compare(a.UpdateID, b.UpdateID) }).UpdateID
		}
		if delay > 0 && sleep(ctx, delay) != nil {
			break
		}
	}
	return nil
}

// accept stores a batch in the inbox and hands the new updates to their handlers.
// When it returns an error nothing was stored, and nothing may be confirmed.
// arrived is when the batch reached the bot, from which a tap's steps are timed.
func (t *Bot) accept(ctx context.Context, items []journal.InboxItem, arrived time.Time) error {
	for i := range items {
		// The key is read from what is kept, as the inbox's migration reads it, so
		// that it holds no secret either.
		items[i].Body = inboxBody(items[i].Body, t.opts.Token)
		items[i].Key = updateKey(items[i].UpdateID, items[i].Body)
	}
	fresh, err := t.journal.Receive(ctx, items)
	if err != nil {
		return err
	}
	t.opts.Counters.taken(len(fresh))
	stored := time.Now()
	for _, it := range fresh {
		t.dispatch(ctx, it, arrived, stored)
	}
	return nil
}

// inboxBody is what the inbox keeps of an update: a person may paste a token or a
// key into a chat, so the bot's token and anything that looks like a secret are
// withheld; the command that carried one is refused. The body is kept byte for byte
// otherwise, unless a JSON escape spells a secret that the raw text does not show
// ("\u003a" for the token's colon): then its strings are withheld as decoded and
// the body is written anew.
func inboxBody(body []byte, token string) []byte {
	s, _ := secret.Redact(withholdToken(string(body), token))
	if !strings.Contains(s, `\u`) {
		return []byte(s)
	}
	return withholdDecoded([]byte(s), token)
}

func withholdToken(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, secret.Withheld)
}

// withholdDecoded withholds secrets in the decoded strings (keys included) of the
// JSON body, and returns body itself when there are none, or when it is not JSON.
func withholdDecoded(body []byte, token string) []byte {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber() // numbers are written back exactly as they came
	var v any
	if d.Decode(&v) != nil {
		return body
	}
	changed := false
	withhold := func(s string) string {
		r, _ := secret.Redact(withholdToken(s, token))
		changed = changed || r != s
		return r
	}
	var clean func(v any) any
	clean = func(v any) any {
		switch v := v.(type) {
		case string:
			return withhold(v)
		case []any:
			for i := range v {
				v[i] = clean(v[i])
			}
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[withhold(k)] = clean(e)
			}
			return out
		}
		return v
	}
	v = clean(v)
	if !changed {
		return body
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return body
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

type retryAfter struct{ d time.Duration }

func (r *retryAfter) Error() string { return fmt.Sprintf("Telegram asked to wait %s", r.d) }

// getUpdates makes one long-poll request.
func (t *Bot) getUpdates(ctx context.Context, offset int64) ([]journal.InboxItem, error) {
	form := url.Values{
		"timeout":         {strconv.Itoa(int(t.opts.PollTimeout / time.Second))},
		"allowed_updates": {allowedUpdates},
	}
	if offset > 0 {
		form.Set("offset", strconv.FormatInt(offset, 10))
	}
	reply, err := t.call(ctx, "getUpdates", form)
	if err != nil {
		return nil, err
	}
	items := make([]journal.InboxItem, 0, len(reply.Result))
	for _, raw := range reply.Result {
		var head struct {
			UpdateID int64 `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("getUpdates: an update without update_id: %w", err)
		}
		items = append(items, journal.InboxItem{UpdateID: head.UpdateID, Body: raw})
	}
	return items, nil
}

// call makes one Bot API request with a form body and maps its failures; the
// token appears in no error.
func (t *Bot) call(ctx context.Context, method string, form url.Values) (*apiReply, error) {
	u := strings.TrimSuffix(t.opts.APIURL, "/") + "/bot" + t.opts.Token + "/" + method
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errors.New(t.redact(err.Error()))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", method, t.redact(err.Error()))
	}
	defer resp.Body.Close()
	var r apiReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: HTTP %d with a body that is not the Bot API's", method, resp.StatusCode)
	}
	switch {
	case r.OK:
		return &r, nil
	case r.ErrorCode == http.StatusUnauthorized:
		return nil, ErrTokenRejected
	case r.ErrorCode == http.StatusConflict:
		return nil, ErrConflict
	case r.ErrorCode == http.StatusTooManyRequests:
		return nil, &retryAfter{d: time.Duration(max(1, r.Parameters.RetryAfter)) * time.Second}
	}
	return nil, fmt.Errorf("%s: %d %s", method, r.ErrorCode, t.redact(r.Description))
}
