package standin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

func polling(s *standin.Server) bool { return s.Polling() }

func TestLongPollDeliversPushedMessage(t *testing.T) {
	srv := newServer(t, standin.Options{})
	sink, updates := updateSink()
	b, _ := newBot(t, srv, 3*time.Second, sink)
	startBot(t, b)
	waitFor(t, srv, "the bot to poll", polling)

	id := srv.PushMessage(222, 222, "/status now")
	u := receive(t, updates)
	if u.ID != id || u.Message == nil {
		t.Fatalf("update = %+v, want message update %d", u, id)
	}
	m := u.Message
	if m.Text != "/status now" || m.From.ID != 222 || m.From.IsBot || m.Chat.ID != 222 || m.Chat.Type != models.ChatTypePrivate {
		t.Errorf("message = %+v, want user 222's text in the private chat", m)
	}
	if len(m.Entities) != 1 || m.Entities[0].Type != models.MessageEntityTypeBotCommand || m.Entities[0].Length != 7 {
		t.Errorf("entities = %+v, want one bot_command of length 7", m.Entities)
	}
}

func TestLongPollDeliversCallbackQuery(t *testing.T) {
	srv := newServer(t, standin.Options{})
	done := make(chan string, 1)
	handler := bot.WithCallbackQueryDataHandler("ap:", bot.MatchTypePrefix, func(ctx context.Context, b *bot.Bot, u *models.Update) {
		cq := u.CallbackQuery
		_, _ = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID, Text: "approved"})
		done <- cq.Message.Message.Text
	})
	b, _ := newBot(t, srv, 3*time.Second, handler)
	sent, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: 222, Text: "Approve op 42?", ReplyMarkup: approveKeyboard("42")})
	if err != nil {
		t.Fatal(err)
	}
	startBot(t, b)

	_, queryID := srv.PushCallbackQuery(222, 222, sent.ID, "ap:42")
	if got := receive(t, done); got != "Approve op 42?" {
		t.Errorf("callback message text = %q, want the bot's message", got)
	}
	waitFor(t, srv, "the answer", func(s *standin.Server) bool { return len(s.CallbackAnswers()) == 1 })
	if got := srv.CallbackAnswers()[0].QueryID; got != queryID {
		t.Errorf("answered %q, want %q", got, queryID)
	}
}

func TestBotConfirmsUpdatesWithOffset(t *testing.T) {
	srv := newServer(t, standin.Options{FirstUpdateID: 52259544})
	sink, updates := updateSink()
	b, _ := newBot(t, srv, 3*time.Second, sink)
	startBot(t, b)

	first := srv.PushMessage(1, 1, "one")
	receive(t, updates)
	waitFor(t, srv, "the update to be confirmed", func(s *standin.Server) bool { return len(s.PendingUpdates()) == 0 })
	confirmed := slices.ContainsFunc(srv.CallsTo("getUpdates"), func(c standin.Call) bool {
		return c.Params["offset"] == strconv.FormatInt(first+1, 10)
	})
	if first != 52259544 || !confirmed {
		t.Errorf("first update %d, confirmed by offset %d: %v", first, first+1, confirmed)
	}
}

func getUpdates(t *testing.T, srv *standin.Server, form url.Values) []int64 {
	t.Helper()
	r := post(t, srv, "getUpdates", form)
	if !r.OK {
		t.Fatalf("getUpdates(%v) = %+v", form, r)
	}
	var updates []struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(r.Result, &updates); err != nil {
		t.Fatal(err)
	}
	ids := []int64{}
	for _, u := range updates {
		ids = append(ids, u.ID)
	}
	return ids
}

func TestGetUpdatesOffsetAndLimit(t *testing.T) {
	srv := newServer(t, standin.Options{})
	a := srv.PushMessage(1, 1, "a")
	bID := srv.PushMessage(1, 1, "b")
	c := srv.PushMessage(1, 1, "c")

	steps := []struct {
		form url.Values
		want []int64
	}{
		{nil, []int64{a, bID, c}},
		{url.Values{"limit": {"1"}}, []int64{a}},
		{url.Values{"offset": {strconv.FormatInt(bID, 10)}}, []int64{bID, c}},
		{nil, []int64{bID, c}}, // a was confirmed and is gone for good
		{url.Values{"offset": {"-1"}}, []int64{c}},
		{url.Values{"offset": {strconv.FormatInt(c+1, 10)}}, []int64{}},
	}
	for i, step := range steps {
		if got := getUpdates(t, srv, step.form); !slices.Equal(got, step.want) {
			t.Errorf("step %d getUpdates(%v) = %v, want %v", i, step.form, got, step.want)
		}
	}
}

func TestLongPollHoldsUntilAnUpdateArrives(t *testing.T) {
	srv := newServer(t, standin.Options{})
	result := make(chan []int64, 1)
	start := time.Now()
	go func() {
		resp, err := http.PostForm(srv.URL()+"/bot"+srv.Token()+"/getUpdates", url.Values{"timeout": {"30"}})
		if err != nil {
			result <- nil
			return
		}
		var r struct {
			Result []struct {
				ID int64 `json:"update_id"`
			} `json:"result"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		var ids []int64
		for _, u := range r.Result {
			ids = append(ids, u.ID)
		}
		result <- ids
	}()
	waitFor(t, srv, "the poll to be held", polling)
	id := srv.PushMessage(1, 1, "wake up")
	if got := receive(t, result); !slices.Equal(got, []int64{id}) {
		t.Errorf("poll returned %v, want [%d]", got, id)
	}
	if elapsed := time.Since(start); elapsed > 25*time.Second {
		t.Errorf("poll took %v, want it answered on push", elapsed)
	}
}

func TestLongPollEndsWhenClientLeaves(t *testing.T) {
	srv := newServer(t, standin.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/bot"+srv.Token()+"/getUpdates?timeout=60", nil)
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	waitFor(t, srv, "the poll to be held", polling)
	cancel()
	if err := receive(t, errc); !errors.Is(err, context.Canceled) {
		t.Errorf("client error = %v, want context.Canceled", err)
	}
	waitFor(t, srv, "the poll to end", func(s *standin.Server) bool { return !s.Polling() })
}

// A newer getUpdates terminates the one held open, as Telegram does: the older
// is answered 409 "terminated by other getUpdates request" (the recorded
// error), and the newer is served.
func TestANewerPollTerminatesTheOlderWithConflict(t *testing.T) {
	srv := newServer(t, standin.Options{})
	first, errs := newBot(t, srv, 30*time.Second)
	startBot(t, first)
	waitFor(t, srv, "the first bot to poll", polling)

	got := post(t, srv, "getUpdates", nil)
	if got.Status != 200 {
		t.Errorf("the newer poll = %+v, want it served", got)
	}
	want := fixtureReply(t, "error_409_conflict_getupdates.json")
	err := receive(t, errs)
	if !errors.Is(err, bot.ErrorConflict) || !strings.Contains(err.Error(), want.Description) {
		t.Errorf("the older poller's error = %v, want ErrorConflict, %q", err, want.Description)
	}
}

func TestAllowedUpdatesAreSticky(t *testing.T) {
	srv := newServer(t, standin.Options{})
	getUpdates(t, srv, url.Values{"allowed_updates": {`["callback_query"]`}})
	srv.PushMessage(1, 1, "ignored")
	cb, _ := srv.PushCallbackQuery(1, 1, 1, "x")

	if got := getUpdates(t, srv, nil); !slices.Equal(got, []int64{cb}) {
		t.Errorf("getUpdates = %v, want only the callback query %d", got, cb)
	}
	if got := srv.AllowedUpdates(); !slices.Equal(got, []string{"callback_query"}) {
		t.Errorf("AllowedUpdates = %v", got)
	}
}

// keyTree lists every key path of a JSON value, for shape comparisons.
func keyTree(prefix string, v any, out map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			out[prefix+"."+k] = true
			keyTree(prefix+"."+k, child, out)
		}
	case []any:
		for _, child := range v {
			keyTree(prefix+"[]", child, out)
		}
	}
}

func shape(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	keyTree("", v, out)
	return out
}

func TestPushedUpdatesMatchFixtureShapes(t *testing.T) {
	srv := newServer(t, standin.Options{
		Chats: []standin.Chat{{ID: 222222222, Type: "private", FirstName: "Michael", Username: "mscott"}},
	})
	sent := post(t, srv, "sendMessage", url.Values{"chat_id": {"222222222"}, "text": {"Manage your data"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Add","callback_data":"add"}]]}`}})
	var m struct {
		ID int `json:"message_id"`
	}
	_ = json.Unmarshal(sent.Result, &m)
	srv.PushMessage(222222222, 222222222, "Hello")
	srv.PushCallbackQuery(222222222, 222222222, m.ID, "read")

	r := post(t, srv, "getUpdates", nil)
	var updates []json.RawMessage
	if err := json.Unmarshal(r.Result, &updates); err != nil || len(updates) != 2 {
		t.Fatalf("updates = %s, %v", r.Result, err)
	}
	for i, name := range []string{"update_private_text_message.json", "update_callback_query.json"} {
		got, want := shape(t, updates[i]), shape(t, fixture(t, name))
		for k := range want {
			if !got[k] {
				t.Errorf("%s: pushed update lacks %s", name, k)
			}
		}
		for k := range got {
			if !want[k] {
				t.Errorf("%s: pushed update has extra %s", name, k)
			}
		}
	}
}

func TestPushUpdateTakesRawJSON(t *testing.T) {
	srv := newServer(t, standin.Options{})
	raw := `{"update_id":1,"channel_post":{"message_id":2,"chat":{"id":-4444444444444,"title":"Cletto","type":"channel"},"date":1585146043,"text":"Aaaaa"}}`
	id := srv.PushUpdate(json.RawMessage(raw))
	var got []models.Update
	r := post(t, srv, "getUpdates", nil)
	if err := json.Unmarshal(r.Result, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != id || got[0].ChannelPost == nil || got[0].ChannelPost.Text != "Aaaaa" {
		t.Errorf("updates = %+v, want the channel post as update %d", got, id)
	}
}

func TestCloseReleasesHeldPoll(t *testing.T) {
	srv := standin.New(standin.Options{})
	errc := make(chan error, 1)
	go func() {
		resp, err := http.PostForm(srv.URL()+"/bot"+srv.Token()+"/getUpdates", url.Values{"timeout": {"60"}})
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(t, srv, "the poll to be held", polling)
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	receive(t, closed)
	receive(t, errc)
}

func TestAnOffsetForgetsRenumberedUpdatesBelowIt(t *testing.T) {
	srv := newServer(t, standin.Options{FirstUpdateID: 500})
	old := srv.PushMessage(1, 1, "last week")
	if got := getUpdates(t, srv, nil); !slices.Equal(got, []int64{old}) {
		t.Fatalf("getUpdates = %v, want [%d]", got, old)
	}
	next := url.Values{"offset": {strconv.FormatInt(old+1, 10)}}
	if got := getUpdates(t, srv, next); len(got) != 0 {
		t.Fatalf("getUpdates(offset %d) = %v, want nothing", old+1, got)
	}

	// A quiet week later Telegram numbers updates afresh, below the last one.
	srv.Renumber(1)
	first := srv.PushMessage(1, 1, "this week")
	if first != 1 {
		t.Fatalf("first update after renumbering = %d, want 1", first)
	}
	if got := getUpdates(t, srv, nil); !slices.Equal(got, []int64{first}) {
		t.Errorf("getUpdates without offset = %v, want the renumbered [%d]", got, first)
	}
	second := srv.PushMessage(1, 1, "and again")
	// An offset above the old ids is the first update to be returned: the new ones
	// are below it, so it confirms them all, read or not.
	if got := getUpdates(t, srv, next); len(got) != 0 {
		t.Errorf("getUpdates(offset %d) = %v, want nothing", old+1, got)
	}
	if got := srv.PendingUpdates(); len(got) != 0 {
		t.Errorf("pending = %v, want everything below the offset forgotten", got)
	}
	if got := srv.ConfirmedUnread(); !slices.Equal(got, []int64{second}) {
		t.Errorf("ConfirmedUnread = %v, want [%d]: returned once, the first was read", got, second)
	}
}

func TestAHeldPollDoesNotReturnUpdatesBelowItsOffset(t *testing.T) {
	srv := newServer(t, standin.Options{FirstUpdateID: 500})
	old := srv.PushMessage(1, 1, "last week")
	getUpdates(t, srv, nil)
	result := make(chan []int64, 1)
	go func() {
		result <- getUpdatesIDs(srv, url.Values{"offset": {strconv.FormatInt(old+1, 10)}, "timeout": {"1"}})
	}()
	waitFor(t, srv, "the poll to be held", polling)
	srv.Renumber(1)
	renumbered := srv.PushMessage(1, 1, "this week")
	if got := receive(t, result); len(got) != 0 {
		t.Errorf("held poll with offset %d returned %v, want nothing", old+1, got)
	}
	if got := srv.ConfirmedUnread(); !slices.Equal(got, []int64{renumbered}) {
		t.Errorf("ConfirmedUnread = %v, want [%d]", got, renumbered)
	}
}

// getUpdatesIDs is getUpdates for a goroutine: nil on any failure.
func getUpdatesIDs(srv *standin.Server, form url.Values) []int64 {
	resp, err := http.PostForm(srv.URL()+"/bot"+srv.Token()+"/getUpdates", form)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r struct {
		OK     bool `json:"ok"`
		Result []struct {
			ID int64 `json:"update_id"`
		} `json:"result"`
	}
	if json.NewDecoder(resp.Body).Decode(&r) != nil || !r.OK {
		return nil
	}
	ids := []int64{}
	for _, u := range r.Result {
		ids = append(ids, u.ID)
	}
	return ids
}

// TestHandedOutIsTheFirstResponse: an update's hand-out time is the first
// getUpdates response that carried it, not a later one that carried it again.
func TestHandedOutIsTheFirstResponse(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now})
	id := srv.PushMessage(222, 222, "hello")
	if _, ok := srv.HandedOut(id); ok {
		t.Fatal("HandedOut before any getUpdates: want none")
	}
	first := clock.Now()
	post(t, srv, "getUpdates", url.Values{})
	clock.Advance(time.Minute)
	post(t, srv, "getUpdates", url.Values{}) // not confirmed: handed out again
	got, ok := srv.HandedOut(id)
	if !ok || !got.Equal(first) {
		t.Errorf("HandedOut = %v, %v; want %v, the first response", got, ok, first)
	}
}

func TestRenumberPendingDeliversTheSameUpdatesUnderNewIDs(t *testing.T) {
	srv := newServer(t, standin.Options{FirstUpdateID: 900})
	first := srv.PushMessage(1, 1, "one")
	srv.PushMessage(1, 1, "two")
	if got := getUpdates(t, srv, nil); !slices.Equal(got, []int64{first, first + 1}) {
		t.Fatalf("getUpdates = %v", got)
	}
	if got := srv.RenumberPending(5); !slices.Equal(got, []int64{5, 6}) {
		t.Fatalf("RenumberPending = %v, want [5 6]", got)
	}
	if got := srv.PushMessage(1, 1, "three"); got != 7 {
		t.Errorf("the next update = %d, want 7", got)
	}
	if got := getUpdates(t, srv, nil); !slices.Equal(got, []int64{5, 6, 7}) {
		t.Errorf("getUpdates after renumbering = %v, want [5 6 7]", got)
	}
	getUpdates(t, srv, url.Values{"offset": {"8"}})
	if got := srv.ConfirmedUnread(); len(got) != 0 {
		t.Errorf("ConfirmedUnread = %v, want none: all were read", got)
	}
}
