package telegram

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the slots, read past the cut

	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/journal"
)

// A send's slots are freed though the database did not answer when the send
// was over: the replica renews the holds of the slots it has open, so a free
// given up would keep the chat's slot, and every later send to that chat, for
// minutes. Here the link to the database goes silent as the send ends, longer
// than a try to free may wait; once it is back, the slots are free, and the
// log said both: the failed free, then the free after a retry.
func TestASendsSlotsAreFreedThoughTheDatabaseWasOutOfReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := pgtest.Fresh(t)
	through, p := pgtest.Through(t, name)
	j, err := journal.Open(ctx, through)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if err := j.Join(ctx, Transport, "r1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	l := NewLimiter(Limits{Overall: 100, InSecond: 30, PerChat: 1, ChatBurst: 1})
	var logs syncbuf.Buffer
	l.share(j, 7, slog.New(slog.NewTextHandler(&logs, nil)))
	l.shared.freeTimeout = 200 * time.Millisecond
	// The retries run as a serving bot runs them: its work, under its context.
	bg, cancel := context.WithCancel(ctx)
	var retries sync.WaitGroup
	stop := l.retryFreesUnder(bg, func(fn func()) { retries.Add(1); go func() { defer retries.Done(); fn() }() })
	t.Cleanup(func() { stop(); cancel(); retries.Wait() }) // before the journal closes
	done, err := l.Wait(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", name) // not through the proxy
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	open := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM send_slots WHERE open = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := open(); n != 2 {
		t.Fatalf("%d slots taken for the send, want 2: its chat's and one of the bot's", n)
	}
	p.Cut(partition.Hang)
	done() // its try to free them waits 200 ms, and gives up
	p.Heal()
	for deadline := time.Now().Add(10 * time.Second); open() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d slots still taken 10 s after the link came back", open())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := logs.WaitFor(wctx, func(s string) bool {
		return strings.Contains(s, "could not be freed; trying again") && strings.Contains(s, "freed after a retry")
	}); err != nil {
		t.Errorf("the log does not say the free failed, then came after a retry (%v):\n%s", err, logs.String())
	}
}
