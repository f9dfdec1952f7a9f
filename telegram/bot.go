// Package telegram is the bot people touch: commands in a private chat, approval
// cards with Approve and Reject buttons on the approver's phone, sends that respect
// Telegram's limits, and every Bot API failure mapped to the tool contract. It sits
// on github.com/go-telegram/bot; its tests run against telegramtest, a fake Bot API
// server speaking the real wire format.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
	"github.com/countersign/countersign/tools"
)

// Transport is the name Telegram's operations are recorded under: only the process
// that owns it (journal.Own) sends them. It is also the surface's name.
const Transport = "telegram"

// DefaultAPIURL is the public Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// DefaultPollTimeout is how long a getUpdates long poll waits for an update:
// under the minute many proxies and NATs allow an idle connection.
const DefaultPollTimeout = 50 * time.Second

// Options configure a Bot. Token is required.
type Options struct {
	Token  string
	APIURL string // default DefaultAPIURL; a self-hosted Bot API server otherwise
	// PollTimeout is the long-poll wait of getUpdates (default
	// DefaultPollTimeout).
	PollTimeout time.Duration
	// SendTimeout bounds one sendMessage (default 30s); past it the outcome is unknown.
	SendTimeout time.Duration
	// Limits are the send rates to keep under (default DefaultLimits).
	Limits *Limits
	// Webhook, when set, receives updates over HTTPS instead of long polling.
	Webhook *Webhook
	Logger  *slog.Logger
	// Clock is the time the poller reckons quiet spells by, and strangers' silence
	// (default time.Now); tests move it forward instead of waiting.
	Clock func() time.Time
	// MessageWorkers is how many messages are handled at once (default 8), at
	// most half of them of one chat, so that a chat whose replies wait for
	// Telegram's pacing of it never holds them all;
	// TapWorkers how many callback queries (default 16): taps have workers of
	// their own, so that no number of busy messages holds up an approval.
	MessageWorkers, TapWorkers int
	// Counters count what the bot does, for its process's metrics (counters.go).
	Counters Counters
	// Files is where payloads' files are kept: an approval card of a photo is
	// sent with the photo itself, read from here. Nil: the card names it only.
	Files tools.FileStore
	// ReviewURL is the public address of the review page's server
	// (-review-url): every card gets a 🔎 Whole payload button that opens it
	// as a Mini App, and says what it leaves out that the page shows. "" for
	// no review page.
	ReviewURL string
}

// Errors that end the bot: they need a person to change something.
var (
	ErrTokenRejected = errors.New("Telegram rejected the bot token (401 Unauthorized): check TELEGRAM_BOT_TOKEN")
	ErrConflict      = errors.New("another process is receiving updates for this bot token, or a webhook is set (409 Conflict): stop the other instance")
)

// Bot is a running Telegram front end of the operator.
type Bot struct {
	opts    Options
	api     *bot.Bot
	me      *models.User
	sender  *Sender
	shared  *coord.Coord // strangers' marks, with the other replicas
	redact  func(string) string
	log     *slog.Logger
	client  *http.Client
	work    sync.WaitGroup
	cards   keyLock // per approval: cards sent before taps are acted on; per chat: a card after its previews
	replies replies // per chat: the requests whose replies are not out, which its cards wait for
	asked   inOrder // per task: its approvals' cards, shown in the order asked

	messages, taps chan job      // stored updates waiting for a worker
	chats          *chatTurns    // the chats whose messages workers have in hand
	edits          chan struct{} // among replicas: a card edit was recorded here
	refusals       chan notice   // answers to strangers, sent from spare capacity
	strangers      strangers

	// Set by Serve.
	ops     *operator.Operator
	handler *command.Handler
	journal *journal.Journal
	policy  *policy.Policy
	pairing Pairing
}

// New connects to the Bot API (getMe) and prepares a bot whose updates resume after
// the last one the journal says was handled. It returns a *TokenError for a token
// of the wrong shape (before any request, whose URL would carry it),
// ErrTokenRejected for a token Telegram refuses, and an error wrapping
// ErrUnreachable when no Bot API answers at APIURL. It takes the token out of the
// spaces and quotes around it (ParseToken). No error or log line carries the
// token, in any spelling (secret.Known).
func New(ctx context.Context, j *journal.Journal, o Options) (*Bot, error) {
	given := o.Token
	var err error
	if o.Token, err = ParseToken(o.Token); err != nil {
		return nil, err
	}
	o = withDefaults(o)
	t := &Bot{opts: o, log: o.Logger, journal: j, shared: coord.New(j), messages: make(chan job, laneQueue), taps: make(chan job, laneQueue),
		refusals: make(chan notice, refusalQueue), edits: make(chan struct{}, 1)}
	t.redact = secret.NewKnown(given).Redact
	t.client = &http.Client{Timeout: o.PollTimeout + 15*time.Second, Transport: o.Counters.roundTripper(transport())}
	// The library makes the method calls; updates are received by poll (or the
	// webhook), which stores each one before Telegram forgets it.
	t.api, err = bot.New(o.Token,
		bot.WithServerURL(strings.TrimSuffix(o.APIURL, "/")),
		bot.WithHTTPClient(o.PollTimeout, t.client),
		bot.WithSkipGetMe(),
		bot.WithErrorsHandler(func(err error) { t.log.Warn("telegram", "err", t.redact(err.Error())) }),
	)
	if err != nil {
		return nil, fmt.Errorf("telegram: %s", t.redact(err.Error()))
	}
	if t.me, err = getMe(ctx, t.api, o.APIURL, t.redact); err != nil {
		return nil, err
	}
	t.sender = &Sender{bot: t.api, limiter: NewLimiter(*o.Limits), redact: t.redact, timeout: o.SendTimeout}
	if j != nil {
		t.sender.limiter.share(j, t.me.ID, t.log) // among replicas, every request is counted with the others' (shared.go)
	}
	return t, nil
}

// idleConns is how many connections to the Bot API are kept open between
// requests: more than the sends that may be in flight at once (InSecond) with the
// poll, cards' edits and answers beside them.
const idleConns = 64

// transport keeps connections to the Bot API open for the next request. The
// default keeps two, so that a burst across chats opened a new connection, and
// against Telegram a TLS handshake, for nearly every send: a round trip or two
// that each chat's next message waits on, because it is spaced from the answer.
func transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = idleConns, idleConns
	return tr
}

func withDefaults(o Options) Options {
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = DefaultPollTimeout
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = 30 * time.Second
	}
	if o.Limits == nil {
		o.Limits = &DefaultLimits
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Webhook != nil {
		o.Webhook = o.Webhook.withDefaults()
	}
	if o.MessageWorkers == 0 {
		o.MessageWorkers = 8
	}
	if o.TapWorkers == 0 {
		o.TapWorkers = 16
	}
	return o
}

// Sender is the bot's tools.Sender, for the registry.
func (t *Bot) Sender() *Sender { return t.sender }

// Me is the bot's own user, as getMe returned it.
func (t *Bot) Me() *models.User { return t.me }

// Deps are what Serve carries commands and decisions out on. Messages and
// taps alike go through the Handler; its Operator's events bring the cards.
type Deps struct {
	Handler *command.Handler
	Policy  *policy.Policy
	// Pairing, when set, offers a code to whoever writes who is no operator,
	// and Serve returns ErrPaired once one is confirmed. Set it only when the
	// policy names no operator: the first person paired becomes one.
	Pairing Pairing
}

// Serve registers the commands menu, resumes pending work, and handles updates
// until ctx ends (nil), the bot cannot go on (ErrConflict, ErrTokenRejected) or a
// person paired (ErrPaired). It waits for the work it started (commits in
// flight) before it returns; it may then be called again.
func (t *Bot) Serve(ctx context.Context, d Deps) error {
	t.ops, t.handler, t.policy, t.pairing = d.Handler.Operator, d.Handler, d.Policy, d.Pairing
	if err := t.setCommands(ctx); err != nil {
		t.log.Warn("could not register the command menu", "err", err)
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A send's free that failed is tried again as this Serve's work, so that
	// the bot stopping ends it rather than leaving it to reach a closed journal.
	stopFreeing := t.sender.limiter.retryFreesUnder(ctx, t.spawn)
	defer stopFreeing()
	// Subscribed before Resume, so that what it finishes is told; ended after
	// every goroutine that could publish has returned.
	unsubscribe := t.ops.Subscribe(func(ev operator.Event) { t.onEvent(ctx, ev) })
	defer unsubscribe()
	var paired atomic.Int64 // the person paired, 0 before
	if d.Pairing != nil {
		t.spawn(func() {
			if who, ok := t.awaitPairing(ctx, d.Pairing); ok {
				paired.Store(int64(who))
				cancel() // to be served again, with the person paired among the operators
			}
		})
	}
	err := t.ops.Resume(ctx)
	if err == nil {
		t.startWorkers(ctx)
		err = t.replay(ctx)
	}
	if err == nil {
		// This process owns sending Telegram's operations (journal.Own), or is one
		// of its replicas (journal.Join), so it runs the operator's sweep: expiry,
		// reconcile, and the work other processes left, whose events come back
		// through onEvent.
		t.spawn(func() { t.ops.Sweep(ctx) })
		if t.journal.Replica() != "" {
			t.spawn(func() { t.takeOver(ctx) })
			t.spawn(func() { t.makeCardEdits(ctx) })
		}
		err = t.receive(ctx)
	}
	cancel()
	t.ops.Wait()  // first: resumed work may still hand events to t.work
	stopFreeing() // before the wait: no retry is counted in once it has begun
	t.work.Wait()
	t.drain() // what no worker took stays unhandled in the inbox, for the next Serve's replay
	switch {
	case parent.Err() != nil:
		return nil // asked to stop: whatever failed, failed because of it
	case paired.Load() != 0:
		t.welcome(parent, policy.UserID(paired.Load()))
		return ErrPaired
	}
	return err
}

// receive gets updates by webhook when configured, else by long polling; among
// replicas only the leader polls (see pollWhileLeading).
func (t *Bot) receive(ctx context.Context) error {
	if t.opts.Webhook != nil {
		return t.serveWebhook(ctx)
	}
	return t.pollWhileLeading(ctx)
}

// pollWhileLeading long-polls while this process leads its replicas (always, for
// the one process that owns Telegram's sending), and waits while another replica
// polls, to take over within a second of its end: Telegram lets one poller at a
// time have the updates. A 409 among replicas is the old leader still polling an
// instant after it lost the lead: the poll is tried again, not given up.
func (t *Bot) pollWhileLeading(ctx context.Context) error {
	replica := t.journal.Replica() != ""
	for ctx.Err() == nil {
		leading, changed := t.ops.Leading()
		if !leading {
			t.log.Info("another replica polls; this one takes over if it stops")
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		pollCtx, stop := context.WithCancel(ctx)
		if changed != nil {
			go func() {
				select {
				case <-changed: // the lead was lost (or changed): stop polling
					stop()
				case <-pollCtx.Done():
				}
			}()
		}
		if replica {
			t.log.Info("polling: this replica leads")
		}
		if _, err := t.api.DeleteWebhook(pollCtx, &bot.DeleteWebhookParams{}); err != nil && pollCtx.Err() == nil {
			t.log.Warn("could not delete a webhook before polling", "err", t.redact(err.Error()))
		}
		err := t.poll(pollCtx)
		stop()
		switch {
		case replica && errors.Is(err, ErrConflict):
			t.log.Warn("another replica still polls; trying again", "err", err)
			if sleep(ctx, time.Second) != nil {
				return nil
			}
		case err != nil:
			return err
		}
	}
	return nil
}

func (t *Bot) setCommands(ctx context.Context) error {
	var cmds []models.BotCommand
	for _, u := range command.Usage {
		cmds = append(cmds, models.BotCommand{Command: u.Name, Description: strings.TrimSpace(u.Args + " " + u.Doc)})
	}
	_, err := t.api.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
	if err != nil {
		return errors.New(t.redact(err.Error()))
	}
	return nil
}

// drain empties the lanes of the updates queued and not taken.
func (t *Bot) drain() {
	for _, lane := range []chan job{t.messages, t.taps} {
		for len(lane) > 0 {
			<-lane
		}
	}
}

// spawn runs fn in the background, counted so that Serve waits for it.
func (t *Bot) spawn(fn func()) {
	t.work.Add(1)
	go func() { defer t.work.Done(); fn() }()
}

// send sends a plain message that is not a commit (a reply, a card), as an answer
// to message replyTo when it is not 0; it makes one more try when Telegram asks to
// wait a little.
func (t *Bot) send(ctx context.Context, chat int64, text string, markup models.ReplyMarkup, replyTo int) (*models.Message, error) {
	params := &bot.SendMessageParams{ChatID: chat, Text: text, ReplyMarkup: markup}
	if replyTo != 0 {
		params.ReplyParameters = &models.ReplyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
	}
	for try := 0; ; try++ {
		done, err := t.sender.limiter.Wait(ctx, strconv.FormatInt(chat, 10))
		if err != nil {
			return nil, err
		}
		m, err := t.api.SendMessage(ctx, params)
		done()
		var tmr *bot.TooManyRequestsError
		if errors.As(err, &tmr) && try == 0 && tmr.RetryAfter <= 10 {
			if err := sleep(ctx, time.Duration(tmr.RetryAfter)*time.Second); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, errors.New(t.redact(err.Error()))
		}
		return m, nil
	}
}

// reply sends text to chat, split when long, and logs a failure: a reply that does
// not arrive loses nothing, the journal holds the facts.
func (t *Bot) reply(ctx context.Context, chat int64, text string) {
	for _, part := range tools.Split(text, tools.MaxMessageUnits) {
		if _, err := t.send(ctx, chat, part, nil, 0); err != nil {
			t.log.Warn("reply not delivered", "chat", chat, "err", err)
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
