package telegram

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// A free of a send's slots that failed is tried again as the bot's own work:
// stopping the bot ends the retries, a try under way included, and Serve
// returns with none left running, so that no try reaches the journal once it
// is closed. Here every try to free fails, and the first retry hangs until
// its context ends, far longer than the test waits: a retry that did not end
// with the bot would keep Serve from returning, or go on running after it.
//
// Not parallel: it looks for retries left running, and another test's could
// be taken for this one's.
func TestStoppingTheBotEndsTheRetriesOfAFailedFree(t *testing.T) {
	ctx := context.Background()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: replicaToken})
	var b *Bot
	rg := rigtest.New(t, rigtest.Replica("r1", 10*time.Second), rigtest.SenderOf(func(j *journal.Journal) tools.Sender {
		var err error
		b, err = New(ctx, j, Options{Token: replicaToken, APIURL: srv.URL(), PollTimeout: time.Second,
			Limits: &Limits{Overall: 1000, InSecond: 1000, PerChat: 1000, PerGroup: 1000, ChatBurst: 100},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return b.Sender()
	}), rigtest.Parts(func(w *wiring.Parts) { w.Logger = slog.New(slog.DiscardHandler) }))
	free := &failingFreer{retrying: make(chan struct{})}
	b.sender.limiter.shared.freer = free
	b.sender.limiter.shared.freeTimeout = time.Minute // a try the stop did not end outlasts the test's wait

	serveCtx, stop := context.WithCancel(ctx)
	served, returned := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(returned)
		served <- b.Serve(serveCtx, Deps{Handler: rg.Handler, Policy: rg.Policy})
	}()
	t.Cleanup(func() { // before the rig closes the journal, should the test end early
		stop()
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
		}
	})
	// Polling comes after Serve has set up its background work.
	if err := srv.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) > 0 }); err != nil {
		t.Fatalf("the bot does not poll: %v", err)
	}
	if _, err := b.Sender().Send(ctx, tools.Message{Target: "222", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-free.retrying:
	case <-time.After(10 * time.Second):
		t.Fatalf("the failed free was not tried again (%d tries)", free.count())
	}

	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s of the stop: it waits on a retry that the stop did not end")
	}
	if stacks := retriesRunning(); stacks != "" {
		t.Errorf("a retry of the free runs on after Serve returned (%d tries so far); it would reach the journal once closed:\n%s", free.count(), stacks)
	}
}

// failingFreer fails every free: the first at once, then each until its
// context ends, as a database out of reach does. retrying is closed at the
// first retry.
type failingFreer struct {
	mu       sync.Mutex
	tries    int
	retrying chan struct{}
}

var errOutOfReach = errors.New("the database is out of reach")

func (f *failingFreer) FreeSlots(ctx context.Context, _ time.Time, _ ...coord.SlotFree) (int, error) {
	f.mu.Lock()
	f.tries++
	n := f.tries
	f.mu.Unlock()
	if n == 1 {
		return 0, errOutOfReach
	}
	if n == 2 {
		close(f.retrying)
	}
	<-ctx.Done()
	return 0, errors.Join(errOutOfReach, ctx.Err())
}

func (f *failingFreer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

// retriesRunning returns the stacks of the goroutines that free a send's
// slots or wait to try again, "" for none.
func retriesRunning() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "telegram.(*shared).freeing") || strings.Contains(g, "telegram.(*shared).retryFree") {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}
