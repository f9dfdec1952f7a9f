package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
)

// refusal is all a stranger learns.
const refusal = "Sorry, this bot only answers its operators."

// Strangers are answered once, then not again for strangerSilence; at most
// maxStrangers are remembered, and while that many were answered within the hour
// a new stranger gets no answer: a flood of strangers costs a map, not messages.
const (
	strangerSilence = time.Hour
	maxStrangers    = 10_000
	// refusalQueue bounds the refusals waiting for spare sending capacity.
	refusalQueue = 256
)

// strangers remembers who was refused recently. It is safe for concurrent use.
type strangers struct {
	mu      sync.Mutex
	told    map[int64]time.Time
	fullTil time.Time // while full, no entry expires before this
}

// first reports whether user should be refused now, and if so remembers it: a
// stranger is told once per strangerSilence.
func (s *strangers) first(user int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.told[user]; ok && now.Sub(at) < strangerSilence {
		return false
	}
	if len(s.told) >= maxStrangers && !s.prune(now) {
		return false
	}
	if s.told == nil {
		s.told = map[int64]time.Time{}
	}
	s.told[user] = now
	return true
}

// prune forgets the strangers told longer ago than the silence, and reports
// whether there is room now. A full map of recent strangers is not swept again
// until its oldest entry expires.
func (s *strangers) prune(now time.Time) bool {
	if now.Before(s.fullTil) {
		return false
	}
	oldest := now
	for user, at := range s.told {
		switch {
		case now.Sub(at) >= strangerSilence:
			delete(s.told, user)
		case at.Before(oldest):
			oldest = at
		}
	}
	if len(s.told) < maxStrangers {
		return true
	}
	s.fullTil = oldest.Add(strangerSilence)
	return false
}

// forget drops user, whose refusal could not go, so that a later message may.
func (s *strangers) forget(user int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.told, user)
}

// refuse tells a stranger, once in a while, that the bot is not theirs. The
// refusal waits its turn behind everything else: it is sent only from spare
// sending capacity, and dropped when too many wait.
func (t *Bot) refuse(chat, user int64) {
	if !t.strangers.first(user, t.opts.Clock()) {
		return
	}
	select {
	case t.refusals <- chat:
	default:
		t.strangers.forget(user)
		t.log.Debug("refusal dropped: too many waiting", "chat", chat)
	}
}

// sendRefusals sends the queued refusals until ctx ends, each only when the
// limiter has capacity to spare, so that cards and commits never wait behind them.
func (t *Bot) sendRefusals(ctx context.Context) {
	for {
		var chat int64
		select {
		case <-ctx.Done():
			return
		case chat = <-t.refusals:
		}
		target := strconv.FormatInt(chat, 10)
		var done func()
		for done == nil {
			var wait time.Duration
			if done, wait = t.sender.limiter.TrySpare(target); done != nil {
				break
			}
			if sleep(ctx, max(wait, 10*time.Millisecond)) != nil {
				return
			}
		}
		_, err := t.api.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: refusal})
		done()
		if err != nil && ctx.Err() == nil {
			t.log.Debug("refusal not delivered", "chat", chat, "err", t.redact(err.Error()))
		}
	}
}
