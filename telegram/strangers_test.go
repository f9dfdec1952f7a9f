package telegram_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// refusals counts the messages to each of users.
func refusals(s *telegramtest.Server, users []int64) map[int64]int {
	n := map[int64]int{}
	for _, u := range users {
		n[u] = len(s.Messages(u))
	}
	return n
}

// strangerIDs are n users who are neither operators nor approvers.
func strangerIDs(n int) []int64 {
	var ids []int64
	for i := range n {
		ids = append(ids, int64(5000+i))
	}
	return ids
}

// settled waits until every update pushed so far is stored and handled, and every
// refusal that handling queued has gone: the refusal to one more stranger, queued
// after all of them, is sent after them.
func (r *rig) settled() {
	r.t.Helper()
	r.waitFor("every update confirmed", func(s *telegramtest.Server) bool { return len(s.PendingUpdates()) == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := r.j.Unhandled(ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("updates still unhandled: %d", len(left))
		case <-tick.C:
		}
	}
	// A stranger never seen before is refused behind every refusal queued so
	// far; a fresh one each time, so that an earlier refusal cannot answer for it.
	last := 4999 - markers.Add(1)
	r.command(last, "are you there?")
	r.replyContaining(last, "only answers its operators")
}

// markers numbers the strangers settled uses as markers.
var markers atomic.Int64

func TestStrangersAreRefusedOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	strangers := strangerIDs(5)
	for range 4 {
		for _, s := range strangers {
			r.command(s, "/send 222 let me in")
		}
	}
	r.settled()
	for s, n := range refusals(r.srv, strangers) {
		if n != 1 {
			t.Errorf("stranger %d got %d messages, want one refusal", s, n)
		}
	}

	// An hour later the first stranger is told again, once.
	r.clock.advance(time.Hour + time.Minute)
	r.command(strangers[0], "/send 222 still me")
	r.command(strangers[0], "/send 222 still me")
	r.settled()
	if got := refusals(r.srv, strangers[:1])[strangers[0]]; got != 2 {
		t.Errorf("stranger %d got %d refusals after an hour, want 2 in all", strangers[0], got)
	}
}

func TestCardsDoNotWaitBehindStrangers(t *testing.T) {
	t.Parallel()
	// An overall budget of 4 a second: a flood of refusals spends it for seconds.
	r := newRig(t, withLimits(&telegram.Limits{Overall: 4, PerChat: 10000, PerGroup: 10000, ChatBurst: 1000}))
	strangers := strangerIDs(12)
	for range 3 {
		for _, s := range strangers {
			r.command(s, "hello?")
		}
	}
	r.command(alice, "/send 222 the card goes first")
	r.card(alice)
	r.card(bob)
	r.waitFor("a refusal to every stranger", func(s *telegramtest.Server) bool {
		return !slices.Contains(slices.Collect(maps.Values(refusals(s, strangers))), 0)
	})
	r.settled()

	var order []string
	for _, c := range r.srv.CallsTo("sendMessage") {
		switch {
		case strings.Contains(c.Params["text"], "Approval needed"):
			order = append(order, "card")
		case slices.Contains(strangers, c.ChatID):
			order = append(order, fmt.Sprint(c.ChatID))
		}
	}
	lastCard, lastRefusal := -1, -1
	for i, o := range order {
		if o == "card" {
			lastCard = i
		} else {
			lastRefusal = i
		}
	}
	if lastCard > lastRefusal {
		t.Errorf("sends in order: %v\nwant both cards sent before the last refusal: cards never wait behind strangers", order)
	}
	for s, n := range refusals(r.srv, strangers) {
		if n != 1 {
			t.Errorf("stranger %d got %d messages, want one refusal", s, n)
		}
	}
}
