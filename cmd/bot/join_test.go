package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// A replica that joins under the name of a process that died drops the
// chats' turns that process held: none of its runs lives on, and the chat's
// next message need not wait out the dead one's lease.
func TestJoiningDropsTheTurnsTheNameLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "journal.db")
	dead, err := journal.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if err := dead.Join(ctx, "telegram", "r1", 0); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := dead.CreateTask(ctx, journal.Task{Requester: 7, Chat: "100", Summary: "chat", Origin: "telegram:message:100:1", Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	turn := coord.ChatTurn{Transport: "telegram", Chat: "100", Task: task.ID}
	if err := coord.New(dead).QueueChatTurn(ctx, turn); err != nil {
		t.Fatal(err)
	}
	if try, err := coord.New(dead).TakeChatTurn(ctx, turn); err != nil || !try.Taken {
		t.Fatalf("TakeChatTurn = %+v, %v; want the turn taken", try, err)
	}
	dead.Close() // the process dies with its run in the turn

	j, err := journal.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := join(ctx, j, "telegram", replicaOf{name: "r1"}, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if err := coord.New(j).HoldChatTurn(ctx, turn); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Errorf("the dead process's turn after the join: HoldChatTurn = %v, want ErrChatTurnLost", err)
	}
}
