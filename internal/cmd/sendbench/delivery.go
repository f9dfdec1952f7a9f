package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/internal/pgschema"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

type outcome struct {
	start, end           time.Time
	delivered, dups, tmr int
	unknown, gaveUp      int
	errs                 []error // operations the operator could not carry out
}

func (o outcome) elapsed() time.Duration { return o.end.Sub(o.start) }

// flood are Telegram's documented limits, as strict as the fake server can make
// them: no burst within a chat.
var flood = telegramtest.FloodLimits{PerSecond: 30, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}

// deliveryRun runs shape s through Countersign and the library alone, prints both
// and the goal's verdict, and says whether the goal was met.
func deliveryRun(ctx context.Context, c config, s shape) (bool, error) {
	minimum := theoreticalMinimum(s)
	fmt.Printf("Delivery %s: %d messages across %d chats, %s, %s; Telegram's limits enforced (30/s overall, 1/s per chat)\n",
		s, s.n, s.chats, photos(c.photos), dropped(c.drop))
	fmt.Printf("  theoretical minimum: %.2f s\n", minimum.Seconds())
	var ours outcome
	oursName := "countersign"
	if c.replicas > 1 {
		oursName = fmt.Sprintf("countersign ×%d", c.replicas)
	}
	for _, run := range []struct {
		name string
		fn   func(context.Context, config, shape, *telegramtest.Server) (outcome, error)
	}{{oursName, viaCountersign}, {"go-telegram/bot alone", viaLibrary}} {
		srv := newServer(c, s)
		o, err := run.fn(ctx, c, s, srv)
		o.tmr, o.dups, o.delivered = srv.TooManyRequests(), duplicates(srv), len(srv.AllMessages())
		if err != nil {
			srv.Close()
			return false, fmt.Errorf("%s: %w", run.name, err)
		}
		fmt.Printf("  %-22s %6.2f s  %.2f×  429s: %3d  delivered: %3d  duplicates: %2d  unknown, held for verification: %2d",
			run.name, o.elapsed().Seconds(), ratio(o.elapsed(), minimum), o.tmr, o.delivered, o.dups, o.unknown)
		if o.gaveUp > 0 {
			fmt.Printf("  given up: %d", o.gaveUp)
		}
		fmt.Println()
		if len(o.errs) > 0 {
			fmt.Printf("      %d operations failed, the first: %v\n", len(o.errs), o.errs[0])
		}
		if c.verbose {
			whereTimeGoes(srv, o)
		}
		srv.Close()
		if run.name == oursName {
			ours = o
		}
	}
	r := ratio(ours.elapsed(), minimum)
	return verdict(r <= goalRatio && ours.tmr == 0 && ours.dups == 0 && ours.delivered == s.n && len(ours.errs) == 0,
		"delivery %s: %.2f× the minimum (goal ≤ %.2f×), %d 429s, %d duplicates (goal 0 and 0), %d of %d delivered, %d failed",
		s, r, goalRatio, ours.tmr, ours.dups, ours.delivered, s.n, len(ours.errs)), nil
}

// dropped says which sends lose their response.
func dropped(k int) string {
	switch k {
	case 0:
		return "no response lost"
	case 1:
		return "every send's response lost"
	}
	return fmt.Sprintf("every %dth send's response lost", k)
}

// photos says which messages are photos.
func photos(k int) string {
	switch k {
	case 0:
		return "texts only"
	case 1:
		return "every message a photo"
	}
	return fmt.Sprintf("every %dth message a photo", k)
}

// isPhoto reports whether message i is a photo.
func isPhoto(c config, i int) bool { return c.photos > 0 && i%c.photos == c.photos-1 }

// photo is message i's photo: a small PNG with i after its end, which image
// decoders never read, so that each is a file of its own.
func photo(i int) []byte {
	img := image.NewGray(image.Rect(0, 0, 64, 48))
	var b bytes.Buffer
	_ = png.Encode(&b, img) // an in-memory image always encodes
	return binary.BigEndian.AppendUint64(b.Bytes(), uint64(i))
}

func ratio(d, minimum time.Duration) float64 { return float64(d) / float64(minimum) }

// theoreticalMinimum is the longer of N at 30/s and the busiest chat at 1/s (its
// first message goes at once).
func theoreticalMinimum(s shape) time.Duration {
	busiest := (s.n + s.chats - 1) / s.chats
	return max(time.Duration(s.n)*time.Second/30, time.Duration(busiest-1)*time.Second)
}

func newServer(c config, s shape) *telegramtest.Server {
	srv := telegramtest.New(telegramtest.Options{Token: token, Flood: &flood})
	for k := 1; c.drop > 0 && k*c.drop <= s.n; k++ {
		srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").OnCall(k * c.drop))
	}
	return srv
}

func chatOf(i, chats int) int64 { return int64(1000 + i%chats) }

func text(i int) string { return fmt.Sprintf("digest item %d", i) }

// duplicates counts messages delivered more than once to the same chat.
func duplicates(srv *telegramtest.Server) int {
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

// whereTimeGoes prints, from the fake server's record, when the chats' first
// messages arrived, how far apart each chat's messages arrived, and how long the
// run went on after the last one.
func whereTimeGoes(srv *telegramtest.Server, o outcome) {
	byChat := map[int64][]time.Time{}
	var last time.Time
	for _, call := range srv.CallsTo("sendMessage") {
		if call.Status == 429 {
			continue
		}
		byChat[call.ChatID] = append(byChat[call.ChatID], call.Time)
		if call.Time.After(last) {
			last = call.Time
		}
	}
	var firsts, gaps []time.Duration
	for _, ts := range byChat {
		firsts = append(firsts, ts[0].Sub(o.start))
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
		}
	}
	slices.Sort(firsts)
	slices.Sort(gaps)
	if len(gaps) == 0 || len(firsts) == 0 {
		return
	}
	var sum time.Duration
	for _, g := range gaps {
		sum += g
	}
	fmt.Printf("      every chat's first message in by %s; a chat's messages apart: min %s, median %s, mean %s, max %s; after the last arrived: %s; connections opened: %d\n",
		ms(firsts[len(firsts)-1]), ms(gaps[0]), ms(gaps[len(gaps)/2]), ms(sum/time.Duration(len(gaps))), ms(gaps[len(gaps)-1]), ms(o.end.Sub(last)), srv.Connections())
}

// perChat runs send for each chat's messages in order, all chats at once.
func perChat(s shape, send func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, s.chats)
	for ch := 0; ch < s.chats; ch++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := ch; i < s.n; i += s.chats {
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

// viaCountersign sends every message as its own auto-approved commit, as the bot
// does: each its task, its journaled lifecycle, the bot's sender and limiter.
// With c.replicas above 1, that many replicas on the journal at c.journal send
// them, each chat's messages in turn from one replica after another, so that
// only the budget they share in the journal keeps them under Telegram's limits.
func viaCountersign(ctx context.Context, c config, s shape, srv *telegramtest.Server) (outcome, error) {
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
	for ch := 0; ch < s.chats; ch++ {
		rule.Chats = append(rule.Chats, strconv.FormatInt(chatOf(ch, s.chats), 10))
	}
	photoRule := rule
	photoRule.Tool = "commit_send_photo"
	p.AutoApprove, p.Verify.DuplicateWindow = []policy.AutoApprove{rule, photoRule}, 0
	p.Tools["commit_send_photo"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	root := filepath.Join(dir, "outbox")
	p.Files.Roots = []string{root}
	if err := writePhotos(c, s, root); err != nil {
		return outcome{}, err
	}
	files, err := filestore.Open(filepath.Join(dir, "files"))
	if err != nil {
		return outcome{}, err
	}
	name := filepath.Join(dir, "journal.db")
	if c.journal != "" {
		var schema string
		if name, schema, err = pgschema.Fresh(ctx, c.journal, "sendbench_"); err != nil {
			return outcome{}, err
		}
		defer func() {
			if err := pgschema.Drop(c.journal, schema); err != nil {
				fmt.Fprintf(os.Stderr, "sendbench: drop schema %s: %v\n", schema, err)
			}
		}()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var ops []*operator.Operator
	for r := range max(1, c.replicas) {
		op, closeJ, err := newSender(ctx, c, name, r, srv, p, files)
		if err != nil {
			return outcome{}, err
		}
		defer closeJ()
		ops = append(ops, op)
	}
	var mu sync.Mutex
	o := outcome{start: time.Now()}
	err = perChat(s, func(i int) error {
		r, err := sendOne(ctx, ops[(i/s.chats)%len(ops)], c, s, root, i)
		mu.Lock()
		defer mu.Unlock()
		if r.SideEffect == action.SideEffectUnknown {
			o.unknown++
		}
		if err != nil {
			o.errs = append(o.errs, fmt.Errorf("message %d: %w", i, err))
		}
		return nil // the run goes on: a failure is part of what it reports
	})
	o.end = time.Now()
	return o, err
}

// newSender opens the journal at name and the bot's sender and operator over
// it: the only process on it, or with c.replicas above 1, replica r+1, whose
// leases are renewed every second until ctx ends. close closes the journal.
func newSender(ctx context.Context, c config, name string, r int, srv *telegramtest.Server, p *policy.Policy, files *filestore.Store) (*operator.Operator, func(), error) {
	j, err := journal.Open(ctx, name, journal.WithSeenKey(operator.SeenKey))
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*operator.Operator, func(), error) {
		j.Close()
		return nil, nil, err
	}
	if c.replicas > 1 {
		if err := j.Join(ctx, telegram.Transport, fmt.Sprint("r", r+1), 0); err != nil {
			return fail(err)
		}
		shared := coord.New(j)
		go func() {
			for range time.Tick(time.Second) {
				if ctx.Err() != nil || j.RenewLeases(ctx) != nil || shared.RenewLeases(ctx) != nil {
					return
				}
			}
		}()
	} else if err := j.Own(ctx, telegram.Transport); err != nil {
		return fail(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: srv.URL(), SendTimeout: 5 * time.Second, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	reg, err := tools.NewRegistry(p, tg.Sender(), tools.WithFiles(files))
	if err != nil {
		return fail(err)
	}
	op, err := operator.New(operator.Options{Journal: j, Tools: reg, Policy: p, Logger: quiet, Transport: telegram.Transport})
	if err != nil {
		return fail(err)
	}
	return op, func() { j.Close() }, nil
}

// writePhotos puts the run's photos in root, one file each.
func writePhotos(c config, s shape, root string) error {
	if err := os.Mkdir(root, 0o700); err != nil {
		return err
	}
	for i := 0; i < s.n; i++ {
		if isPhoto(c, i) {
			if err := os.WriteFile(photoPath(root, i), photo(i), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

func photoPath(root string, i int) string { return filepath.Join(root, fmt.Sprintf("photo-%d.png", i)) }

// sendOne sends message i as a task of its own: a text, or a photo from root.
func sendOne(ctx context.Context, op *operator.Operator, c config, s shape, root string, i int) (action.Result, error) {
	task, err := op.StartTask(ctx, journal.Task{Requester: 1, Summary: "sendbench"})
	if err != nil {
		return action.Result{}, err
	}
	tool, args := "commit_send_message", fmt.Sprintf(`{"chat_id":"%d","text":"%s"}`, chatOf(i, s.chats), text(i))
	if isPhoto(c, i) {
		tool, args = "commit_send_photo", fmt.Sprintf(`{"chat_id":"%d","file":%q,"caption":"%s"}`, chatOf(i, s.chats), photoPath(root, i), text(i))
	}
	return op.Call(ctx, task.ID, operator.Call{Tool: tool, Args: []byte(args)})
}

// viaLibrary sends with go-telegram/bot and the retry a careful user writes: wait
// retry_after on 429 as often as Telegram asks, and try again on any other error,
// up to 10 times.
func viaLibrary(ctx context.Context, c config, s shape, srv *telegramtest.Server) (outcome, error) {
	b, err := bot.New(token, bot.WithServerURL(srv.URL()), bot.WithSkipGetMe())
	if err != nil {
		return outcome{}, err
	}
	var mu sync.Mutex
	o := outcome{start: time.Now()}
	err = perChat(s, func(i int) error {
		for fails := 0; fails < 10; {
			var err error
			if isPhoto(c, i) {
				_, err = b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chatOf(i, s.chats), Caption: text(i),
					Photo: &models.InputFileUpload{Filename: "photo.png", Data: bytes.NewReader(photo(i))}})
			} else {
				_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatOf(i, s.chats), Text: text(i)})
			}
			var tmr *bot.TooManyRequestsError
			switch {
			case err == nil:
				return nil
			case errors.As(err, &tmr):
				time.Sleep(time.Duration(tmr.RetryAfter) * time.Second)
			default:
				fails++
				time.Sleep(100 * time.Millisecond)
			}
		}
		mu.Lock()
		o.gaveUp++
		mu.Unlock()
		return nil
	})
	o.end = time.Now()
	return o, err
}
