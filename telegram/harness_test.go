package telegram_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

const (
	alice   = 100 // operator and approver
	bob     = 200 // approver
	mallory = 999 // nobody
	target  = 222 // where messages go
	token   = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
)

// watchEvery is how often the rig's operator looks for work other processes left.
const watchEvery = 50 * time.Millisecond

// fast are limits that never slow a test down; the rate tests use the real ones.
var fast = &telegram.Limits{Overall: 10000, PerChat: 10000, PerGroup: 10000, ChatBurst: 1000}

// logBuffer collects log lines safely across goroutines.
type logBuffer = syncbuf.Buffer

// rig is a bot wired over a real journal and operator, talking over real HTTP to
// the fake Bot API server. restart stops it and starts a new one on the same
// journal and server, as a process restart does.
type rig struct {
	t       *testing.T
	srv     *telegramtest.Server
	srvOpts telegramtest.Options
	clock   *shiftClock
	dir     string
	pol     *policy.Policy
	limits  *telegram.Limits
	webhook *telegram.Webhook
	edit    func(*telegram.Options)
	jopts   []journal.Option // how the next start opens the journal
	model   string           // an Anthropic-compatible server for plain text; "" for none
	pairing bool             // offer pairing codes (a desk over dir), as a bot without operators does
	lease   time.Duration    // a replica (r1) with this lease, when not 0
	// reviewer makes the handler's review links; nil for none.
	reviewer command.Reviewer
	logs     *logBuffer
	j        *journal.Journal
	vault    *vault.Vault
	bot      *telegram.Bot
	op       *operator.Operator
	stop     context.CancelFunc
	done     chan error
}

type rigOption func(*rig)

func withPolicy(edit func(*policy.Policy)) rigOption     { return func(r *rig) { edit(r.pol) } }
func withReviewer(rv command.Reviewer) rigOption         { return func(r *rig) { r.reviewer = rv } }
func withLimits(l *telegram.Limits) rigOption            { return func(r *rig) { r.limits = l } }
func withWebhook(w *telegram.Webhook) rigOption          { return func(r *rig) { r.webhook = w } }
func withModel(url string) rigOption                     { return func(r *rig) { r.model = url } }
func withReplica(lease time.Duration) rigOption          { return func(r *rig) { r.lease = lease } }
func withOptions(edit func(*telegram.Options)) rigOption { return func(r *rig) { r.edit = edit } }
func withServer(edit func(*telegramtest.Options)) rigOption {
	return func(r *rig) { edit(&r.srvOpts) }
}

// shiftClock is the real time moved forward by what a test skips (a quiet week).
type shiftClock struct{ shift atomic.Int64 }

func (c *shiftClock) now() time.Time          { return time.Now().Add(time.Duration(c.shift.Load())) }
func (c *shiftClock) advance(d time.Duration) { c.shift.Add(int64(d)) }

// Now and Sleep make it the operator's clock too: its sweep reckons digests and
// expired notes by it. A sleep is a real one.
func (c *shiftClock) Now() time.Time { return c.now() }

func (c *shiftClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newRig(t *testing.T, opts ...rigOption) *rig {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{alice}, Approvers: []policy.UserID{alice, bob}}
	p.Backoff.Base = 50 * time.Millisecond
	r := &rig{t: t, dir: t.TempDir(), pol: p, limits: fast, logs: &logBuffer{}, clock: &shiftClock{},
		srvOpts: telegramtest.Options{Token: token}}
	for _, o := range opts {
		o(r)
	}
	r.srv = telegramtest.NewServer(t, r.srvOpts)
	r.start()
	t.Cleanup(r.shutdown)
	return r
}

func (r *rig) start() {
	r.t.Helper()
	ctx := context.Background()
	files, err := filestore.Open(filepath.Join(r.dir, "files")) // the rig's own, over the same folder
	if err != nil {
		r.t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	var tg *telegram.Bot
	rg := rigtest.New(r.t, rigtest.Dir(r.dir), rigtest.Policy(r.pol), rigtest.Owning(), rigtest.Clock(r.clock), rigtest.JournalOptions(r.jopts...),
		rigtest.SenderOf(func(j *journal.Journal) tools.Sender {
			o := telegram.Options{Token: token, APIURL: r.srv.URL(), PollTimeout: time.Second,
				SendTimeout: 2 * time.Second, Limits: r.limits, Logger: logger, Webhook: r.webhook,
				Clock: r.clock.now, Files: files}
			if r.edit != nil {
				r.edit(&o)
			}
			var err error
			if tg, err = telegram.New(ctx, j, o); err != nil {
				r.t.Fatal(err)
			}
			return tg.Sender()
		}),
		rigtest.Parts(func(w *wiring.Parts) { w.Logger, w.SweepEvery, w.WatchEvery = logger, 50*time.Millisecond, watchEvery }),
		r.joining())
	r.t.Cleanup(r.shutdown) // before the rig closes the journal: cleanups run last first
	j, v, reg, op, h := rg.Journal, rg.Vault, rg.Tools, rg.Operator, rg.Handler
	if r.model != "" {
		watched := model.NewWatch(model.NewAnthropic("sk-ant-rig-key", r.model), 5*time.Second, 10*time.Second, nil)
		h.Agent = agent.NewLoop(model.NewRecovery(watched, model.Policy{}), "claude-test", op, reg, agent.LoopLimits{}, nil)
	}
	ctx, r.stop = context.WithCancel(ctx)
	r.done = make(chan error, 1)
	r.j, r.bot, r.vault, r.op = j, tg, v, op
	if r.reviewer != nil {
		h.Reviewer = r.reviewer
	}
	deps := telegram.Deps{Handler: h, Policy: r.pol}
	if r.pairing {
		desk, err := pairing.Open(r.dir, pairing.Options{Every: 20 * time.Millisecond})
		if err != nil {
			r.t.Fatal(err)
		}
		deps.Pairing = desk
	}
	go func() { r.done <- tg.Serve(ctx, deps) }()
}

// joining makes the rig's process replica r1 when the rig has a lease.
func (r *rig) joining() rigtest.Option {
	if r.lease == 0 {
		return rigtest.Replica("", 0)
	}
	return rigtest.Replica("r1", r.lease)
}

func (r *rig) shutdown() {
	if r.stop == nil {
		return
	}
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		r.t.Error("Serve did not return after its context ended")
	}
	r.j.Close()
	r.stop = nil
}

func (r *rig) restart() {
	r.t.Helper()
	r.shutdown()
	r.start()
}

// waitFor waits for cond on the server, failing the test after a deadline. cond
// is looked at again on every change of the server, and every few milliseconds
// for what the journal records after the last call (a card's record).
func (r *rig) waitFor(what string, cond func(*telegramtest.Server) bool) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := r.srv.WaitTimeout(min(20*time.Millisecond, time.Until(deadline)), cond)
		if err == nil {
			return
		}
		if errors.Is(err, telegramtest.ErrClosed) || !time.Now().Before(deadline) {
			r.t.Fatalf("waiting for %s: %v\ncalls: %s\nlogs:\n%s", what, err, r.callSummary(), r.logs.String())
		}
	}
}

func (r *rig) callSummary() string {
	var b strings.Builder
	for _, c := range r.srv.Calls() {
		fmt.Fprintf(&b, "\n  %s chat=%d status=%d %s", c.Method, c.ChatID, c.Status, c.Description)
	}
	return b.String()
}

// command sends a text from a user in their private chat.
func (r *rig) command(user int64, text string) { r.srv.PushMessage(user, user, text) }

// card waits for the newest approval card in chat, sent and recorded, and
// returns it.
func (r *rig) card(chat int64) telegramtest.Message {
	r.t.Helper()
	var card telegramtest.Message
	r.waitFor(fmt.Sprintf("an approval card in chat %d", chat), func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(m.Text, "Approval needed") && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				card = m
			}
		}
		return card.MessageID != 0 && r.recorded(card)
	})
	return card
}

// recorded reports whether card is recorded in the journal as a card of the
// approval its operation waits on: cards are shown in the background, and a
// test that goes on (a restart, a count of commits) waits for the record too.
func (r *rig) recorded(card telegramtest.Message) bool {
	id := opPattern.FindString(card.Text[strings.Index(card.Text, "Operation: ")+1:])
	a, err := r.j.LatestApproval(context.Background(), id)
	if err != nil {
		return false
	}
	cards, err := r.j.Cards(context.Background(), a.ID)
	return err == nil && slices.ContainsFunc(cards, func(c journal.Card) bool {
		return c.ChatID == card.Chat.ID && c.MessageID == card.MessageID
	})
}

// tap presses the button of a card whose text contains label.
func (r *rig) tap(user int64, card telegramtest.Message, label string) {
	r.t.Helper()
	data := buttonData(r.t, card, label)
	r.srv.PushCallbackQuery(user, card.Chat.ID, card.MessageID, data)
}

func delivered(chat int64) func(*telegramtest.Server) int {
	return func(s *telegramtest.Server) int { return len(s.Messages(chat)) }
}

func atLeast(n int, count func(*telegramtest.Server) int) func(*telegramtest.Server) bool {
	return func(s *telegramtest.Server) bool { return count(s) >= n }
}

// replyContaining waits for a message in chat containing text.
func (r *rig) replyContaining(chat int64, text string) telegramtest.Message {
	r.t.Helper()
	var found telegramtest.Message
	r.waitFor(fmt.Sprintf("a message with %q in chat %d", text, chat), func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(m.Text, text) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

func buttonData(t *testing.T, m telegramtest.Message, label string) string {
	t.Helper()
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal(m.ReplyMarkup, &kb); err != nil {
		t.Fatalf("reply markup %s: %v", m.ReplyMarkup, err)
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if strings.Contains(b.Text, label) {
				return b.CallbackData
			}
		}
	}
	t.Fatalf("no %q button on %q", label, m.Text)
	return ""
}

// newRigOn starts a second bot (another process) against the same server.
func newRigOn(t *testing.T, srv *telegramtest.Server) *rig {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: t.TempDir(), pol: p, limits: fast, logs: &logBuffer{}, srv: srv, clock: &shiftClock{}}
	r.start()
	t.Cleanup(func() {
		if r.stop != nil {
			r.shutdown()
		}
	})
	return r
}

func (r *rig) operation(id string) journal.Operation {
	r.t.Helper()
	op, err := r.j.Operation(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return op
}

// cardFor waits for an open approval card (one with buttons) about opID in chat.
func (r *rig) cardFor(chat int64, opID string) telegramtest.Message {
	r.t.Helper()
	var card telegramtest.Message
	r.waitFor("card "+opID, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(m.Text, "Operation: "+opID) && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				card = m
			}
		}
		return card.MessageID != 0 && r.recorded(card)
	})
	return card
}

var opPattern = regexp.MustCompile(`op-[a-z0-9]+`)

func opIn(t *testing.T, text string) string {
	t.Helper()
	id := opPattern.FindString(text)
	if id == "" {
		t.Fatalf("no operation id in %q", text)
	}
	return id
}

// notice waits for an unknown-outcome notice (with its resolve buttons) in chat.
func (r *rig) notice(chat int64) telegramtest.Message {
	r.t.Helper()
	var found telegramtest.Message
	r.waitFor("an unknown-outcome notice", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(string(m.ReplyMarkup), "rs1:") {
				found = m
			}
		}
		return found.MessageID != 0
	})
	return found
}
