package standin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/telegram/standin"
)

func TestPinChatMessage(t *testing.T) {
	srv := newServer(t, standin.Options{
		Chats: []standin.Chat{{ID: -1001557912345, Type: "supergroup", Title: "Desk", Username: "news_desk"}},
	})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	const chat = -1001557912345
	first, _ := sendText(ctx, b, chat, "rules")
	second, _ := sendText(ctx, b, chat, "agenda")

	for _, id := range []int{first.ID, second.ID} {
		if ok, err := b.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: chat, MessageID: id, DisableNotification: true}); !ok || err != nil {
			t.Fatalf("pin %d = %v, %v", id, ok, err)
		}
	}
	info, err := b.GetChat(ctx, &bot.GetChatParams{ChatID: "@news_desk"})
	if err != nil {
		t.Fatalf("GetChat: %v", err)
	}
	if info.ID != chat || info.Type != "supergroup" || info.Title != "Desk" || info.PinnedMessage == nil || info.PinnedMessage.Text != "agenda" {
		t.Errorf("chat = %+v pinned %+v, want Desk with agenda pinned", info, info.PinnedMessage)
	}
	if got := srv.Pinned(chat); !slices.Equal(got, []int{first.ID, second.ID}) {
		t.Errorf("Pinned = %v, want both", got)
	}

	if ok, err := b.UnpinChatMessage(ctx, &bot.UnpinChatMessageParams{ChatID: chat}); !ok || err != nil {
		t.Fatalf("unpin latest = %v, %v", ok, err)
	}
	info, _ = b.GetChat(ctx, &bot.GetChatParams{ChatID: chat})
	if info.PinnedMessage == nil || info.PinnedMessage.ID != first.ID {
		t.Errorf("after unpinning the latest: pinned %+v, want rules", info.PinnedMessage)
	}
	if _, err := b.UnpinChatMessage(ctx, &bot.UnpinChatMessageParams{ChatID: chat, MessageID: first.ID}); err != nil {
		t.Fatal(err)
	}
	if info, _ = b.GetChat(ctx, &bot.GetChatParams{ChatID: chat}); info.PinnedMessage != nil {
		t.Errorf("after unpinning all: pinned %+v, want none", info.PinnedMessage)
	}

	// Each pin posted a service message, which took a message id.
	if next, _ := sendText(ctx, b, chat, "next"); next.ID != second.ID+3 {
		t.Errorf("next message id = %d, want %d after two pin service messages", next.ID, second.ID+3)
	}
}

func TestPinRejections(t *testing.T) {
	srv := newServer(t, standin.Options{Chats: []standin.Chat{{ID: 7}}})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		desc string
	}{
		{"pin unknown message", func() error {
			_, err := b.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: 7, MessageID: 42})
			return err
		}, "Bad Request: message to pin not found"},
		{"unpin unknown message", func() error {
			_, err := b.UnpinChatMessage(ctx, &bot.UnpinChatMessageParams{ChatID: 7, MessageID: 42})
			return err
		}, "Bad Request: message to unpin not found"},
		{"getChat of an unknown chat", func() error {
			_, err := b.GetChat(ctx, &bot.GetChatParams{ChatID: 999})
			return err
		}, "Bad Request: chat not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), tt.desc) {
				t.Errorf("error = %v, want %q", err, tt.desc)
			}
		})
	}
}
