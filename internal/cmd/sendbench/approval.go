package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/cmd/quantile"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	_ "github.com/mattn/go-sqlite3" // the bare durable inserts

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

// approver is the operator and only approver: cards go to this private chat.
const approver = 100

// firstTarget is the chat of the first approved message; each approval writes to
// a chat of its own, which the per-chat limit never holds up.
const firstTarget = 5000

// approvalEvery spaces the approvals: each makes three sends (its card, the
// approved message, the outcome), and at one every 150 ms they keep under the
// overall limit (28/s), which would otherwise hold up the timed sends. A tap
// that comes while the bot sends at its limit waits its turn, as it should; that
// wait is not the path's cost.
const approvalEvery = 150 * time.Millisecond

// waitLimit bounds every wait on the fake server.
const waitLimit = 30 * time.Second

// approvalRun times approvals through the bot and the two baselines, and prints
// their medians and 99th percentiles.
func approvalRun(ctx context.Context, c config) error {
	fmt.Printf("Approval latency: %d approvals, one at a time, from the tap's update leaving the fake server (in a getUpdates response) to the approved sendMessage reaching it\n", c.approvals)
	ours, parts, err := countersignTaps(ctx, c)
	bare := parts.bare
	if err != nil {
		return fmt.Errorf("countersign: %w", err)
	}
	lib, err := libraryTaps(ctx, c)
	if err != nil {
		return fmt.Errorf("go-telegram/bot alone: %w", err)
	}
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{
		{"countersign: update stored, tap recorded, committing, sent", ours},
		{"go-telegram/bot alone, sending as soon as it sees the tap", lib},
		{"two bare durable inserts (approved, committing), in between", bare},
	} {
		fmt.Printf("  %-62s median %9s  p99 %9s\n", row.name, ms(quantile.Of(row.d, 0.5)), ms(quantile.Of(row.d, 0.99)))
	}
	fmt.Printf("      countersign's split: tap handed out to its answer arriving median %s (p99 %s), answer arriving to the send arriving median %s (p99 %s)\n",
		ms(quantile.Of(parts.toAnswer, 0.5)), ms(quantile.Of(parts.toAnswer, 0.99)), ms(quantile.Of(parts.toSend, 0.5)), ms(quantile.Of(parts.toSend, 0.99)))
	return nil
}

// countersignTaps runs the bot as countersign run does (journal, vault, verifier,
// operator, command handler, long polling) and times c.approvals taps, each on a
// card of its own, one at a time. The fake server enforces no flood limits here
// and the per-chat limit is raised: every approval's card and outcome go to the
// approver's one chat, and at one a second 200 approvals would take minutes; the
// timed send goes to a chat of its own, which the limit never holds up either way.
func countersignTaps(ctx context.Context, c config) ([]time.Duration, split, error) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	dir, err := os.MkdirTemp("", "sendbench")
	if err != nil {
		return nil, split{}, err
	}
	defer os.RemoveAll(dir)
	stop, err := startBot(ctx, c, srv, dir)
	if err != nil {
		return nil, split{}, err
	}
	defer stop()
	insert, closeBare, err := bareInserts(ctx, dir, 2)
	if err != nil {
		return nil, split{}, err
	}
	defer closeBare()
	if err := srv.WaitTimeout(waitLimit, func(s *telegramtest.Server) bool { return s.Polling() }); err != nil {
		return nil, split{}, fmt.Errorf("the bot never polled: %w", err)
	}
	var out []time.Duration
	var parts split
	for i := range c.approvals {
		next := time.Now().Add(approvalEvery)
		d, err := oneApproval(srv, i, &parts)
		if err != nil {
			return nil, split{}, fmt.Errorf("approval %d: %w", i, err)
		}
		out = append(out, d)
		b, err := insert()
		if err != nil {
			return nil, split{}, fmt.Errorf("bare inserts: %w", err)
		}
		parts.bare = append(parts.bare, b)
		time.Sleep(time.Until(next))
	}
	return out, parts, nil
}

// startBot starts the bot on a journal in dir and returns what stops it.
func startBot(ctx context.Context, c config, srv *telegramtest.Server, dir string) (func(), error) {
	p, err := policy.Load(c.policies)
	if err != nil {
		return nil, err
	}
	p.Access = policy.Access{Operators: []policy.UserID{approver}, Approvers: []policy.UserID{approver}}
	j, err := journal.Open(ctx, filepath.Join(dir, "journal.db"), journal.WithSeenKey(operator.SeenKey))
	if err != nil {
		return nil, err
	}
	if err := j.Own(ctx, telegram.Transport); err != nil {
		j.Close()
		return nil, err
	}
	v, err := vault.Open(filepath.Join(dir, "vault"))
	if err != nil {
		j.Close()
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	limits := telegram.DefaultLimits
	limits.PerChat, limits.ChatBurst = 1000, 1
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: srv.URL(), PollTimeout: 10 * time.Second,
		SendTimeout: 5 * time.Second, Limits: &limits, Logger: quiet})
	if err != nil {
		j.Close()
		return nil, err
	}
	reg, err := tools.NewRegistry(p, tg.Sender())
	if err != nil {
		j.Close()
		return nil, err
	}
	op, err := operator.New(operator.Options{Journal: j, Tools: reg, Policy: p, Transport: telegram.Transport, Logger: quiet,
		Vault: v, Verifier: verifier.New(p.Verify, operator.History{Journal: j}, time.Now)})
	if err != nil {
		j.Close()
		return nil, err
	}
	h := &command.Handler{Operator: op, Journal: j, Policy: p, Surface: telegram.Transport}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tg.Serve(ctx, telegram.Deps{Handler: h, Policy: p}) }()
	return func() {
		cancel()
		<-done
		j.Close()
	}, nil
}

// split is where an approval's time goes: until the tap is answered (the tap
// stored and recorded), and from there to the send (committing journaled).
// bare are the baseline's inserts, timed between the approvals, on the same disk
// at the same time.
type split struct{ toAnswer, toSend, bare []time.Duration }

// oneApproval asks for one send, taps Approve on its card, waits until the bot is
// done with it, and returns the span from the tap's hand-out to the send's arrival.
func oneApproval(srv *telegramtest.Server, i int, parts *split) (time.Duration, error) {
	target := int64(firstTarget + i)
	words := fmt.Sprintf("approval latency #%d.", i)
	srv.PushMessage(approver, approver, fmt.Sprintf("/send %d %s", target, words))
	var card telegramtest.Message
	err := srv.WaitTimeout(waitLimit, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(approver) {
			if strings.Contains(m.Text, words) && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				card = m
				return true
			}
		}
		return false
	})
	if err != nil {
		return 0, fmt.Errorf("no card: %w", err)
	}
	data, err := approveData(card)
	if err != nil {
		return 0, err
	}
	update, query := srv.PushCallbackQuery(approver, approver, card.MessageID, data)
	var sent, edited bool
	err = srv.WaitTimeout(waitLimit, func(s *telegramtest.Server) bool {
		sent = len(s.Messages(target)) == 1
		m, _ := s.Message(approver, card.MessageID)
		// The card closed with the outcome: the requester, who holds it,
		// reads the outcome there, and gets no message beside it.
		edited = m.Edits > 0 && strings.Contains(m.Text, "Approved by")
		return sent && edited
	})
	if err != nil {
		return 0, fmt.Errorf("sent %v, card closed with the outcome %v: %w", sent, edited, err)
	}
	d, err := sinceHandedOut(srv, update, target)
	if err != nil {
		return 0, err
	}
	out, _ := srv.HandedOut(update)
	for _, call := range srv.CallsTo("answerCallbackQuery") {
		if call.Params["callback_query_id"] == query {
			parts.toAnswer = append(parts.toAnswer, call.Time.Sub(out))
			parts.toSend = append(parts.toSend, d-call.Time.Sub(out))
		}
	}
	return d, nil
}

// approveData is the callback data of a card's Approve button.
func approveData(card telegramtest.Message) (string, error) {
	var kb struct {
		InlineKeyboard [][]struct {
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal(card.ReplyMarkup, &kb); err != nil {
		return "", fmt.Errorf("card keyboard: %w", err)
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if strings.HasSuffix(b.CallbackData, ":y") {
				return b.CallbackData, nil
			}
		}
	}
	return "", fmt.Errorf("card %d has no Approve button", card.MessageID)
}

// sinceHandedOut is the span from update's first hand-out to the first
// sendMessage to target reaching the server.
func sinceHandedOut(srv *telegramtest.Server, update, target int64) (time.Duration, error) {
	out, ok := srv.HandedOut(update)
	if !ok {
		return 0, fmt.Errorf("update %d never handed out", update)
	}
	for _, call := range srv.CallsTo("sendMessage") {
		if call.ChatID == target {
			return call.Time.Sub(out), nil
		}
	}
	return 0, fmt.Errorf("no sendMessage to %d", target)
}

// libraryTaps times the same span for go-telegram/bot alone: its polling loop and
// a handler that sends the message the moment it sees the tap, then answers it.
// No journal, no record: the fake server's and the library's own cost.
func libraryTaps(ctx context.Context, c config) ([]time.Duration, error) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	onTap := func(ctx context.Context, b *bot.Bot, u *models.Update) {
		cq := u.CallbackQuery
		if cq == nil {
			return
		}
		var target int64
		fmt.Sscanf(cq.Data, "go:%d", &target)
		if _, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: target, Text: "approved"}); err != nil {
			return
		}
		b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID, Text: "Approved."})
	}
	b, err := bot.New(token, bot.WithServerURL(srv.URL()), bot.WithSkipGetMe(), bot.WithDefaultHandler(onTap),
		bot.WithHTTPClient(10*time.Second, &http.Client{Timeout: 20 * time.Second}))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.Start(ctx)
	var out []time.Duration
	for i := range c.approvals {
		target := int64(firstTarget + i)
		update, _ := srv.PushCallbackQuery(approver, approver, 0, fmt.Sprintf("go:%d", target))
		err := srv.WaitTimeout(waitLimit, func(s *telegramtest.Server) bool {
			return len(s.Messages(target)) == 1 && len(s.CallbackAnswers()) == i+1
		})
		if err != nil {
			return nil, fmt.Errorf("tap %d: %w", i, err)
		}
		d, err := sinceHandedOut(srv, update, target)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// bareInserts opens a database with the journal's settings (WAL,
// synchronous=FULL) in dir and returns what times k durable single-row inserts in
// a row: the writes the approval path cannot do without.
func bareInserts(ctx context.Context, dir string, k int) (func() (time.Duration, error), func(), error) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "bare.db")+"?_journal_mode=WAL&_busy_timeout=5000&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		db.Close()
		return nil, nil, err
	}
	round := 0
	timed := func() (time.Duration, error) {
		round++
		start := time.Now()
		for x := range k {
			if _, err := db.ExecContext(ctx, "INSERT INTO t(v) VALUES(?)", fmt.Sprintf("row %d.%d", round, x)); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	return timed, func() { db.Close() }, nil
}
