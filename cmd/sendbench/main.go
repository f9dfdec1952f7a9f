// Command sendbench pushes N auto-approved messages across M chats through the fake
// Bot API server with Telegram's flood limits enforced, once through Countersign and
// once with go-telegram/bot alone, and reports each run's time against the
// theoretical minimum, the 429s it received and the duplicates it caused.
//
//	go run ./cmd/sendbench -n 100 -chats 20 -drop 25
//
// -drop K makes every K-th sendMessage be accepted by Telegram and then lose its
// response, as a timeout after acceptance does in production.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

const token = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

type config struct {
	n, chats, drop int
	policies       string
}

type outcome struct {
	elapsed              time.Duration
	delivered, dups, tmr int
	unknown              int
}

func main() {
	var c config
	flag.IntVar(&c.n, "n", 100, "messages to send")
	flag.IntVar(&c.chats, "chats", 20, "private chats to spread them over")
	flag.IntVar(&c.drop, "drop", 0, "every K-th send is accepted, then its response lost (0: never)")
	flag.StringVar(&c.policies, "policies", "policies.yaml", "policy file to start from")
	flag.Parse()
	if c.n < 1 || c.chats < 1 {
		fmt.Fprintln(os.Stderr, "sendbench: -n and -chats must be positive")
		os.Exit(2)
	}
	ctx := context.Background()
	minimum := theoreticalMinimum(c)
	fmt.Printf("%d messages across %d chats; limits enforced: 30/s overall, 1/s per chat\n", c.n, c.chats)
	fmt.Printf("theoretical minimum: %s\n", minimum.Round(10*time.Millisecond))
	for _, run := range []struct {
		name string
		fn   func(context.Context, config, *telegramtest.Server) (outcome, error)
	}{{"countersign", viaCountersign}, {"go-telegram/bot alone", viaLibrary}} {
		srv := newServer(c)
		o, err := run.fn(ctx, c, srv)
		o.tmr, o.dups, o.delivered = srv.TooManyRequests(), duplicates(srv, c), len(srv.AllMessages())
		srv.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "sendbench: %s: %v\n", run.name, err)
			os.Exit(1)
		}
		fmt.Printf("%-22s %8s (%.2f× the minimum)  429s: %3d  delivered: %3d  duplicates: %2d  unknown, held for verification: %d\n",
			run.name, o.elapsed.Round(10*time.Millisecond), float64(o.elapsed)/float64(minimum), o.tmr, o.delivered, o.dups, o.unknown)
	}
}

// theoreticalMinimum is the longer of N at 30/s and the busiest chat at 1/s (its
// first message goes at once).
func theoreticalMinimum(c config) time.Duration {
	busiest := (c.n + c.chats - 1) / c.chats
	return max(time.Duration(c.n)*time.Second/30, time.Duration(busiest-1)*time.Second)
}

func newServer(c config) *telegramtest.Server {
	srv := telegramtest.New(telegramtest.Options{Token: token, Flood: &telegramtest.FloodLimits{PerSecond: 30, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}})
	for k := 1; c.drop > 0 && k*c.drop <= c.n; k++ {
		srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").OnCall(k * c.drop))
	}
	return srv
}

func chatOf(i, chats int) int64 { return int64(1000 + i%chats) }

func text(i int) string { return fmt.Sprintf("digest item %d", i) }

// duplicates counts messages delivered more than once to the same chat.
func duplicates(srv *telegramtest.Server, c config) int {
	seen, dups := map[string]bool{}, 0
	for _, m := range srv.AllMessages() {
		k := strconv.FormatInt(m.Chat.ID, 10) + "\x00" + m.RawText
		if seen[k] {
			dups++
		}
		seen[k] = true
	}
	return dups
}

// perChat runs send for each chat's messages in order, all chats at once.
func perChat(c config, send func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, c.chats)
	for ch := 0; ch < c.chats; ch++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := ch; i < c.n; i += c.chats {
				if err := send(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// viaCountersign sends every message as its own auto-approved commit.
func viaCountersign(ctx context.Context, c config, srv *telegramtest.Server) (outcome, error) {
	dir, err := os.MkdirTemp("", "sendbench")
	if err != nil {
		return outcome{}, err
	}
	defer os.RemoveAll(dir)
	p, err := policy.Load(c.policies)
	if err != nil {
		return outcome{}, err
	}
	rule := policy.AutoApprove{Tool: "commit_send_message"}
	for ch := 0; ch < c.chats; ch++ {
		rule.Chats = append(rule.Chats, strconv.FormatInt(chatOf(ch, c.chats), 10))
	}
	p.AutoApprove, p.Verify.DuplicateWindow = []policy.AutoApprove{rule}, 0
	j, err := journal.Open(ctx, filepath.Join(dir, "journal.db"))
	if err != nil {
		return outcome{}, err
	}
	defer j.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: srv.URL(), SendTimeout: 5 * time.Second, Logger: quiet})
	if err != nil {
		return outcome{}, err
	}
	reg, err := tools.NewRegistry(p, tg.Sender())
	if err != nil {
		return outcome{}, err
	}
	op, err := operator.New(operator.Options{Journal: j, Tools: reg, Policy: p, Logger: quiet})
	if err != nil {
		return outcome{}, err
	}
	var mu sync.Mutex
	var o outcome
	start := time.Now()
	err = perChat(c, func(i int) error {
		task, err := op.StartTask(ctx, journal.Task{Requester: 1, Summary: "sendbench"})
		if err != nil {
			return err
		}
		args := fmt.Sprintf(`{"chat_id":"%d","text":"%s"}`, chatOf(i, c.chats), text(i))
		r, err := op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: []byte(args)})
		if r.SideEffect == tools.SideEffectUnknown {
			mu.Lock()
			o.unknown++
			mu.Unlock()
		}
		return err
	})
	o.elapsed = time.Since(start)
	return o, err
}

// viaLibrary sends with go-telegram/bot and the retry a careful user writes: wait
// retry_after on 429, and try again on any other error.
func viaLibrary(ctx context.Context, c config, srv *telegramtest.Server) (outcome, error) {
	b, err := bot.New(token, bot.WithServerURL(srv.URL()), bot.WithSkipGetMe())
	if err != nil {
		return outcome{}, err
	}
	start := time.Now()
	err = perChat(c, func(i int) error {
		for try := 0; try < 10; try++ {
			_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatOf(i, c.chats), Text: text(i)})
			var tmr *bot.TooManyRequestsError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &tmr):
				time.Sleep(time.Duration(tmr.RetryAfter) * time.Second)
			default:
				time.Sleep(100 * time.Millisecond)
			}
		}
		return fmt.Errorf("message %d: gave up after 10 tries", i)
	})
	return outcome{elapsed: time.Since(start)}, err
}
