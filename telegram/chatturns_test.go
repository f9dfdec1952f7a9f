package telegram_test

import (
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
)

// A chat whose replies wait for Telegram's pacing of it holds half the message
// workers, never all: with four workers and a reply in alice's chat every 2 s,
// five commands of alice's are answered one by one at that pace, and carol's
// command, sent after them, is answered at once, not behind them.
func TestAPacedChatHoldsHalfTheWorkersNotAll(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.Access = policy.Access{Operators: []policy.UserID{alice, carol}, Approvers: []policy.UserID{alice, bob}}
	}), withLimits(&telegram.Limits{Overall: 10000, PerChat: rate.Every(2 * time.Second), PerGroup: 10000, ChatBurst: 1}),
		withOptions(func(o *telegram.Options) { o.MessageWorkers = 4 }))
	for range 5 {
		r.command(alice, "/help")
	}
	r.waitFor("the first answer to alice", atLeast(1, delivered(alice)))
	r.command(carol, "/help")
	r.waitFor("the answer to carol", atLeast(1, delivered(carol)))
	if n := len(r.srv.Messages(alice)); n != 1 {
		t.Errorf("carol was answered after %d answers to alice, want after the first: her command waited for alice's chat's pace%s", n, r.callSummary())
	}
}
