package telegram

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

// Among replicas, a send that waits for the bot's pool waits in the pool's line
// in the journal, not in its own process's window of all chats: the line orders
// the replicas' senders by when they began to wait, and a send held in a local
// window would join it only later, behind another replica's later senders. So
// with one slot a second for the bot, the send r1 began first goes first,
// though r2 asked for the slot too before it freed.
func TestAmongReplicasASendWaitsInThePoolsLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := filepath.Join(t.TempDir(), "journal.db")
	limits := Limits{Overall: 100, InSecond: 1, PerChat: 1, ChatBurst: 1}
	var ls []*Limiter
	for r := range 2 {
		l := NewLimiter(limits)
		l.share(replicaJournal(t, name, r), 7, slog.New(slog.DiscardHandler))
		ls = append(ls, l)
	}
	db, err := sql.Open("sqlite3", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// inLine waits until replica r has a place in the bot's line.
	inLine := func(r string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM slot_waits WHERE scope = '7' AND holder LIKE ?`, r+"-%").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has no place in the bot's line", r)
			}
		}
	}
	first, err := ls[0].Wait(ctx, "1")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	wait := func(l *Limiter, chat, who string) {
		done, err := l.Wait(ctx, chat)
		if err != nil {
			t.Error(err)
		} else {
			done()
		}
		order <- who
	}
	go wait(ls[0], "2", "r1's")
	inLine("r1")
	go wait(ls[1], "3", "r2's")
	inLine("r2")
	first()
	if a, b := <-order, <-order; a != "r1's" || b != "r2's" {
		t.Errorf("%s send went first, then %s; want r1's, which began to wait first", a, b)
	}
}

// replicaJournal opens the journal at name as replica r+1 ("r1", "r2"…) with a
// 10 s lease, closed when the test ends.
func replicaJournal(t *testing.T, name string, r int) *journal.Journal {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if err := j.Join(ctx, Transport, fmt.Sprint("r", r+1), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return j
}
