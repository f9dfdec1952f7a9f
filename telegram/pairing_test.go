package telegram_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

const newcomer = 500 // writes first to a bot without operators

func withPairing() rigOption { return func(r *rig) { r.pairing = true } }

func noAccess(p *policy.Policy) { p.Access = policy.Access{} }

var pairCode = regexp.MustCompile(`countersign pair ([0-9A-Z]{4}-[0-9A-Z]{4})`)

// code waits for the pairing code sent to user and returns it.
func (r *rig) code(user int64) string {
	r.t.Helper()
	m := r.replyContaining(user, "countersign pair ")
	c := pairCode.FindStringSubmatch(m.Text)
	if c == nil {
		r.t.Fatalf("no code in %q", m.Text)
	}
	return c[1]
}

// served waits for Serve to return by itself and closes the journal, as the
// process that called it does before it serves again.
func (r *rig) served() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		r.j.Close()
		r.stop = nil
		return err
	case <-time.After(10 * time.Second):
		r.t.Fatalf("Serve did not return\nlogs:\n%s", r.logs.String())
		return nil
	}
}

// The first person to write to a bot without operators gets a code; once it
// is confirmed on the machine, the bot tells them and stops serving, so that it
// is served again with them as operator and approver: their /send is then
// carried out, its card comes to them and their tap sends it. Anyone else is
// refused from then on.
func TestPairingMakesTheFirstPersonOperator(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(noAccess), withPairing())
	r.command(newcomer, "/start")
	code := r.code(newcomer)
	if m := r.replyContaining(newcomer, "countersign pair"); !strings.Contains(m.Text, fmt.Sprint(newcomer)) {
		t.Errorf("the code's message %q does not say the user id", m.Text)
	}
	if strings.Contains(r.logs.String(), code) {
		t.Errorf("the log holds the code %s:\n%s", code, r.logs.String())
	}
	if _, err := pairing.Confirm(r.dir, code, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.replyContaining(newcomer, "Paired: you are this bot's operator and approver now")
	if err := r.served(); !errors.Is(err, telegram.ErrPaired) {
		t.Fatalf("Serve = %v, want ErrPaired", err)
	}

	r.pol.Access = policy.Access{Operators: []policy.UserID{newcomer}, Approvers: []policy.UserID{newcomer}}
	r.pairing = false // what the process does: the lists name newcomer, so pairing is closed
	r.start()
	r.command(newcomer, "/send 222 hello from the newcomer")
	r.tap(newcomer, r.card(newcomer), "Approve")
	r.waitFor("the send", atLeast(1, delivered(target)))
	if got := r.srv.Messages(target)[0].Text; got != "hello from the newcomer" {
		t.Errorf("sent %q, want %q", got, "hello from the newcomer")
	}
	r.command(mallory, "/start")
	m := r.replyContaining(mallory, "no role here")
	if strings.Contains(m.Text, "countersign pair") {
		t.Errorf("a stranger after the pairing was offered a code: %q", m.Text)
	}
}

// While pairing is open, each person holds a code of their own, shown again
// when they ask again; a few at most hold one at once. A wrong code pairs
// nobody, and the bot goes on offering.
func TestPairingCodesPerPerson(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(noAccess), withPairing())
	codes := map[int64]string{}
	for u := int64(301); u < 301+pairing.MaxPending; u++ {
		r.command(u, "hello") // not only /start: whatever a newcomer says first
		codes[u] = r.code(u)
	}
	r.command(301, "/start")
	r.waitFor("the code shown again", func(s *telegramtest.Server) bool { return len(s.Messages(301)) == 2 })
	if again := pairCode.FindStringSubmatch(r.srv.Messages(301)[1].Text); again == nil || again[1] != codes[301] {
		t.Errorf("asked again, 301 got %q, want the code %s again", r.srv.Messages(301)[1].Text, codes[301])
	}
	if codes[301] == codes[302] || codes[302] == codes[303] {
		t.Errorf("codes %v, want each person's own", codes)
	}
	r.command(399, "/start")
	if m := r.replyContaining(399, "others are pairing"); strings.Contains(m.Text, "countersign pair") {
		t.Errorf("one too many got a code: %q", m.Text)
	}
	if _, err := pairing.Confirm(r.dir, "ZZZZ-ZZZZ", time.Now()); !errors.Is(err, pairing.ErrWrongCode) {
		t.Fatalf("Confirm(wrong code) = %v, want ErrWrongCode", err)
	}
	r.command(398, "/whoami")
	r.replyContaining(398, "others are pairing") // still serving, still unpaired
	select {
	case err := <-r.done:
		t.Fatalf("Serve returned %v after a wrong code", err)
	default:
	}
	for u := range codes {
		if strings.Contains(fmt.Sprint(r.srv.Messages(u)), "Paired") {
			t.Errorf("%d was told they paired", u)
		}
	}
}

// /whoami and /start tell each person their user id and roles; a stranger
// learns how to be let in, as seldom as any refusal, and so does a stranger's
// command.
func TestWhoAmIForEachRole(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) { p.Access.Escalation = []policy.UserID{dave} }))
	tests := []struct {
		name string
		user int64
		want []string
	}{
		{"operator and approver", alice, []string{"Your user id is 100.", "Your role here: operator and approver.", "/help"}},
		{"approver", bob, []string{"Your user id is 200.", "Your role here: approver."}},
		{"escalation approver", dave, []string{"Your user id is 400.", "Your role here: escalation approver."}},
		{"stranger", mallory, []string{"Your user id is 999.", "no role here", "access.operators", "BOT_OPERATORS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.command(tt.user, "/whoami")
			r.command(tt.user, "/start")
			want := 2
			if tt.user == mallory {
				want = 1 // a stranger is answered once an hour
			}
			r.waitFor("the answers", func(s *telegramtest.Server) bool { return len(s.Messages(tt.user)) >= want })
			for _, m := range r.srv.Messages(tt.user) {
				for _, w := range tt.want {
					if !strings.Contains(m.Text, w) {
						t.Errorf("answer %q lacks %q", m.Text, w)
					}
				}
				if strings.Contains(m.Text, "countersign pair") {
					t.Errorf("answer %q offers pairing to a bot with operators", m.Text)
				}
			}
		})
	}
	const eve = 998
	r.command(eve, "/send 222 hi")
	if m := r.replyContaining(eve, "only answers its operators"); !strings.Contains(m.Text, "998") {
		t.Errorf("the refusal %q does not say the stranger's id", m.Text)
	}
	if got := len(r.srv.Messages(mallory)); got != 1 {
		t.Errorf("the stranger got %d answers, want 1", got)
	}
}

// A person who asks for a code again, and again, is answered each time with
// the code they hold and until when it works: never left to wait in silence
// for it to expire, as a stranger's repeated messages are.
func TestAskingForTheCodeAgainIsAnsweredEachTime(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(noAccess), withPairing())
	r.command(newcomer, "/start")
	code := r.code(newcomer)
	for i := 2; i <= 4; i++ {
		r.command(newcomer, "/start")
		r.waitFor(fmt.Sprintf("answer %d", i), func(s *telegramtest.Server) bool {
			n := 0
			for _, m := range s.Messages(newcomer) {
				if strings.Contains(m.Text, code) {
					n++
				}
			}
			return n == i
		})
	}
	if last := r.srv.Messages(newcomer); !strings.Contains(last[len(last)-1].Text, "You asked before") {
		t.Errorf("a repeated ask was answered %q, want it to say the code is the one already given", last[len(last)-1].Text)
	}
}
