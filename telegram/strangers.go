package telegram

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/policy"
)

// refusal is all a stranger learns: that the bot is not theirs, and their own
// user id, which is what its operator would add to let them in.
func refusal(user policy.UserID) string {
	return "Sorry, this bot only answers its operators. " + joinHow(user)
}

// joinHow tells a stranger how to be let in: by the operator, with their id.
func joinHow(user policy.UserID) string {
	id := strconv.FormatInt(int64(user), 10)
	return "Your user id is " + id + ": to give commands here, ask the bot's operator to add " + id +
		" to access.operators in its policy (or BOT_OPERATORS); to approve, to access.approvers (BOT_APPROVERS)."
}

// notice is a message to a stranger, sent from spare capacity.
type notice struct {
	chat int64
	text string
}

// markWait bounds the journal's answer to whether a replica is to tell a
// stranger: a refusal is worth no longer wait than that.
const markWait = 5 * time.Second

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
	told    map[policy.UserID]time.Time
	fullTil time.Time // while full, no entry expires before this
}

// first reports whether user should be refused now, and if so remembers it: a
// stranger is told once per strangerSilence.
func (s *strangers) first(user policy.UserID, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.told[user]; ok && now.Sub(at) < strangerSilence {
		return false
	}
	if len(s.told) >= maxStrangers && !s.prune(now) {
		return false
	}
	if s.told == nil {
		s.told = map[policy.UserID]time.Time{}
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
func (s *strangers) forget(user policy.UserID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.told, user)
}

// refuse tells a stranger, once in a while, that the bot is not theirs.
func (t *Bot) refuse(ctx context.Context, chat int64, user policy.UserID) {
	t.tellStranger(ctx, chat, user, refusal(user))
}

// tellStranger sends text to a stranger, once in a while: whatever a stranger
// says, they are answered once per strangerSilence. The answer waits its turn
// behind everything else: it is sent only from spare sending capacity, and
// dropped when too many wait.
func (t *Bot) tellStranger(ctx context.Context, chat int64, user policy.UserID, text string) {
	if !t.strangers.first(user, t.opts.Clock()) {
		return
	}
	mark, ok := t.markStranger(ctx, user)
	if !ok {
		return
	}
	select {
	case t.refusals <- notice{chat, text}:
	default:
		t.strangers.forget(user)
		t.unmarkStranger(ctx, mark)
		t.log.Debug("refusal dropped: too many waiting", "chat", chat)
	}
}

// markStranger reports whether this process is the one to tell user now. One
// process alone decides by its memory (strangers.first, asked before). Among
// replicas each sees some of a stranger's messages, so the journal decides:
// the replica that marks the stranger first tells them, once per silence
// across all. The memory stays in front, so that a stranger who writes again
// costs this replica no round trip within the hour. When the journal cannot
// say, nobody is told (a refusal is the lowest of priorities), and the memory
// keeps this replica from asking again within the hour.
func (t *Bot) markStranger(ctx context.Context, user policy.UserID) (coord.StrangerMark, bool) {
	if t.journal == nil || t.journal.Replica() == "" {
		return coord.StrangerMark{}, true
	}
	ctx, cancel := context.WithTimeout(ctx, markWait)
	defer cancel()
	mark, ok, err := t.shared.MarkStranger(ctx, Transport, user, strangerSilence)
	if err != nil {
		t.log.Debug("stranger not told: the journal did not say whether another replica told them", "user", user, "err", err)
		return coord.StrangerMark{}, false
	}
	return mark, ok
}

// unmarkStranger gives back this replica's mark of a stranger whose notice did
// not go, as the memory forgets them, so that a later message is told.
func (t *Bot) unmarkStranger(ctx context.Context, mark coord.StrangerMark) {
	if mark.Grant == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, markWait)
	defer cancel()
	if _, err := t.shared.UnmarkStranger(ctx, mark); err != nil {
		t.log.Debug("stranger's mark not given back: told again an hour later at most", "user", mark.User, "err", err)
	}
}

// sendRefusals sends the queued refusals until ctx ends, each only when the
// limiter has capacity to spare, so that cards and commits never wait behind them.
func (t *Bot) sendRefusals(ctx context.Context) {
	for {
		var n notice
		select {
		case <-ctx.Done():
			return
		case n = <-t.refusals:
		}
		chat := n.chat
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
		_, err := t.api.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: n.text})
		done()
		if err != nil && ctx.Err() == nil {
			t.log.Debug("refusal not delivered", "chat", chat, "err", t.redact(err.Error()))
		}
	}
}
