package coord_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// chatMessage stores the update of message id of chat in the inbox, through
// j, and starts its task as the bot does (origin "telegram:<inbox key>").
func chatMessage(t *testing.T, j member, chat string, id int) coord.ChatTurn {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("message:%s:%d", chat, id)
	if _, err := j.Receive(ctx, []journal.InboxItem{{UpdateID: int64(id), Key: key, Body: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := j.CreateTask(ctx, journal.Task{Requester: 7, Chat: chat, Summary: "chat", Origin: "telegram:" + key, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return coord.ChatTurn{Transport: "telegram", Chat: chat, Task: task.ID}
}

func queueTurn(t *testing.T, j member, turn coord.ChatTurn) {
	t.Helper()
	if err := j.QueueChatTurn(context.Background(), turn); err != nil {
		t.Fatal(err)
	}
}

// try takes turn through j and checks what it found.
func try(t *testing.T, j member, turn coord.ChatTurn, want coord.ChatTurnTry) {
	t.Helper()
	got, err := j.TakeChatTurn(context.Background(), turn)
	if err != nil {
		t.Fatalf("%s: TakeChatTurn of %s: %v", j.Replica(), turn.Task, err)
	}
	if got.Taken != want.Taken || got.Holder != want.Holder || got.Ahead != want.Ahead || !slices.Equal(got.Lapsed, want.Lapsed) {
		t.Fatalf("%s: TakeChatTurn of %s = %+v, want %+v", j.Replica(), turn.Task, got, want)
	}
}

// Two messages of one chat, each on a replica of its own: the one the inbox
// stored first runs first, even when the later one asks first, and the later
// one runs only once the first's turn ended. Another chat's message is not held
// up by them.
func TestAChatsTurnsGoInTheInboxsOrder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAChatsTurnsGoInTheInboxsOrder)
}

func testAChatsTurnsGoInTheInboxsOrder(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	first, second := chatMessage(t, r1, "100", 1), chatMessage(t, r2, "100", 2)
	other := chatMessage(t, r2, "200", 1)

	queueTurn(t, r2, second)
	// The first message is in the inbox, on its way to the queue: it goes first.
	try(t, r2, second, coord.ChatTurnTry{Ahead: 1})
	queueTurn(t, r1, first)
	try(t, r2, second, coord.ChatTurnTry{Ahead: 1})
	try(t, r1, first, coord.ChatTurnTry{Taken: true})
	try(t, r2, second, coord.ChatTurnTry{Holder: "r1"})
	queueTurn(t, r2, other)
	try(t, r2, other, coord.ChatTurnTry{Taken: true})
	if err := r1.HoldChatTurn(ctx, first); err != nil {
		t.Fatalf("the holder's HoldChatTurn: %v", err)
	}
	if err := r2.HoldChatTurn(ctx, second); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Errorf("a waiting message's HoldChatTurn = %v, want ErrChatTurnLost", err)
	}
	// Its run ended, but until its update is handled the second message lets
	// it be (its handler may have more to do in the chat).
	if err := r1.EndChatTurn(ctx, first); err != nil {
		t.Fatal(err)
	}
	try(t, r2, second, coord.ChatTurnTry{Ahead: 1})
	if err := r1.Handled(ctx, "message:100:1"); err != nil {
		t.Fatal(err)
	}
	try(t, r2, second, coord.ChatTurnTry{Taken: true})
	// Taking it again is refused: it holds it.
	try(t, r2, second, coord.ChatTurnTry{Taken: true})
}

// A message waits for an earlier message of its chat that the inbox stored and
// nobody handled for at most a lease: one that never queues (its replica died
// with it, or it is a command) cannot hold the chat longer.
func TestAMessageWaitsForAnUnqueuedEarlierOneAtMostALease(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAMessageWaitsForAnUnqueuedEarlierOneAtMostALease)
}

func testAMessageWaitsForAnUnqueuedEarlierOneAtMostALease(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	chatMessage(t, r1, "100", 1)
	second := chatMessage(t, r2, "100", 2)
	queueTurn(t, r2, second)
	c.Add(6 * time.Second)
	if err := r2.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	try(t, r2, second, coord.ChatTurnTry{Ahead: 1})
	c.Add(4 * time.Second) // a lease since it queued
	try(t, r2, second, coord.ChatTurnTry{Taken: true})
}

// A replica that stops renewing (it died) loses the chat's turn once its lease
// is past, and not before: a renewal in time keeps it. The holder's own proof
// fails a fifth of a lease before that, so that its run is ended before
// another replica may start one; a renewal after the lease ran out brings
// nothing back.
func TestADeadHoldersChatTurnIsTakenAfterItsLease(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testADeadHoldersChatTurnIsTakenAfterItsLease)
}

func testADeadHoldersChatTurnIsTakenAfterItsLease(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	first, second := chatMessage(t, r1, "100", 1), chatMessage(t, r2, "100", 2)
	queueTurn(t, r1, first)
	try(t, r1, first, coord.ChatTurnTry{Taken: true})
	queueTurn(t, r2, second)
	c.Add(8 * time.Second)
	if err := r1.HoldChatTurn(ctx, first); err != nil {
		t.Fatalf("with 2 s of the lease left: HoldChatTurn = %v", err)
	}
	for _, r := range []member{r1, r2} {
		if err := r.RenewLeases(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(8 * time.Second) // 16 s after the take, 8 s after the renewal
	try(t, r2, second, coord.ChatTurnTry{Holder: "r1"})
	if err := r2.RenewLeases(ctx); err != nil { // r1 renews no more
		t.Fatal(err)
	}
	c.Add(time.Second + time.Millisecond)
	if err := r1.HoldChatTurn(ctx, first); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Fatalf("with less than a fifth of the lease left: HoldChatTurn = %v, want ErrChatTurnLost", err)
	}
	try(t, r2, second, coord.ChatTurnTry{Holder: "r1"})
	c.Add(time.Second) // past r1's lease
	try(t, r2, second, coord.ChatTurnTry{Taken: true, Lapsed: []string{"r1 (running)"}})
	if err := r1.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.HoldChatTurn(ctx, first); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Errorf("after the lease and a late renewal: HoldChatTurn = %v, want ErrChatTurnLost", err)
	}
	if _, err := r1.TakeChatTurn(ctx, first); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Errorf("after the lease: TakeChatTurn = %v, want ErrChatTurnLost", err)
	}
	// The late holder's end leaves the new holder's turn alone.
	if err := r1.EndChatTurn(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := r2.HoldChatTurn(ctx, second); err != nil {
		t.Errorf("the new holder's HoldChatTurn after the old one's end: %v", err)
	}
}

// A replica that stops gives up its messages' places in their chats' queues at
// once (Release), but not a turn a run of it holds; a process that joins under
// a dead replica's name drops the turns that name held (nothing of it runs).
func TestAStoppingReplicaGivesUpItsPlacesNotItsRuns(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAStoppingReplicaGivesUpItsPlacesNotItsRuns)
}

func testAStoppingReplicaGivesUpItsPlacesNotItsRuns(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	first, second, third := chatMessage(t, r1, "100", 1), chatMessage(t, r1, "100", 2), chatMessage(t, r2, "100", 3)
	for _, m := range []struct {
		j    member
		turn coord.ChatTurn
	}{{r1, first}, {r1, second}, {r2, third}} {
		queueTurn(t, m.j, m.turn)
	}
	try(t, r1, first, coord.ChatTurnTry{Taken: true})
	if err := r1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.Handled(ctx, "message:100:2"); err != nil { // its update is handled (told the bot stopped)
		t.Fatal(err)
	}
	if _, err := r1.TakeChatTurn(ctx, second); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Fatalf("a place given up: TakeChatTurn = %v, want ErrChatTurnLost", err)
	}
	try(t, r2, third, coord.ChatTurnTry{Holder: "r1"})
	if err := r1.HoldChatTurn(ctx, first); err != nil {
		t.Fatalf("a run's turn after Release: HoldChatTurn = %v", err)
	}
	// r1 dies and a process joins under its name, long before the lease ends.
	r1.Close()
	again := replica(t, name, "r1", c)
	if err := again.HoldChatTurn(ctx, first); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Errorf("the dead process's turn after the join: HoldChatTurn = %v, want ErrChatTurnLost", err)
	}
	// The first message's update, given up by Release too, holds nobody up.
	try(t, r2, third, coord.ChatTurnTry{Taken: true})
}
