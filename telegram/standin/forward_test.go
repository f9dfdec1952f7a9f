package standin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

func TestCopyMessage(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	photo, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", pngOf(t, 20, 20, 1)), Caption: "old"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := b.CopyMessage(ctx, &bot.CopyMessageParams{ChatID: 8, FromChatID: 7, MessageID: photo.ID, Caption: "new"})
	if err != nil {
		t.Fatalf("CopyMessage: %v", err)
	}
	copied, ok := srv.Message(8, id.ID)
	if !ok || copied.Caption != "new" || len(copied.Photo) != 1 || copied.Photo[0].FileUniqueID != photo.Photo[0].FileUniqueID ||
		copied.ForwardOrigin != nil {
		t.Errorf("copy = %+v, want the photo with the new caption and no origin", copied)
	}

	srv.PushMessage(5, 5, "from the user")
	userCopy, err := b.CopyMessage(ctx, &bot.CopyMessageParams{ChatID: 8, FromChatID: 5, MessageID: 1})
	if err != nil {
		t.Fatalf("copy a user's message: %v", err)
	}
	if m, _ := srv.Message(8, userCopy.ID); m.Text != "from the user" || m.From.ID != srv.Bot().ID {
		t.Errorf("copy of the user's message = %+v, want its text sent by the bot", m)
	}
}

func TestForwardMessage(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	srv.PushMessage(5, 5, "forward me")

	m, err := b.ForwardMessage(ctx, &bot.ForwardMessageParams{ChatID: -4001, FromChatID: 5, MessageID: 1})
	if err != nil {
		t.Fatalf("ForwardMessage: %v", err)
	}
	if m.Text != "forward me" || m.ForwardOrigin == nil || m.ForwardOrigin.Type != models.MessageOriginTypeUser ||
		m.ForwardOrigin.MessageOriginUser.SenderUser.ID != 5 {
		t.Fatalf("forwarded = %+v origin %+v, want the text from user 5", m, m.ForwardOrigin)
	}
	again, err := b.ForwardMessage(ctx, &bot.ForwardMessageParams{ChatID: 7, FromChatID: -4001, MessageID: m.ID})
	if err != nil || again.ForwardOrigin.MessageOriginUser.SenderUser.ID != 5 {
		t.Errorf("forward of the forward: %+v, %v; want the first origin kept", again, err)
	}
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: -4001, MessageID: m.ID, Text: "changed"})
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), "Bad Request: message can't be edited") {
		t.Errorf("edit a forwarded message: %v, want message can't be edited", err)
	}
}

func TestCopyAndForwardMissingMessages(t *testing.T) {
	srv := newServer(t, standin.Options{Chats: []standin.Chat{{ID: 7}, {ID: 8}}})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	gone, err := sendText(ctx, b, 7, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: 7, MessageID: gone.ID}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func(from int64, id int) error
		desc string
	}{
		{"copy", func(from int64, id int) error {
			_, err := b.CopyMessage(ctx, &bot.CopyMessageParams{ChatID: 8, FromChatID: from, MessageID: id})
			return err
		}, "Bad Request: message to copy not found"},
		{"forward", func(from int64, id int) error {
			_, err := b.ForwardMessage(ctx, &bot.ForwardMessageParams{ChatID: 8, FromChatID: from, MessageID: id})
			return err
		}, "Bad Request: message to forward not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, id := range []int{gone.ID, 99} {
				if err := tt.call(7, id); !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), tt.desc) {
					t.Errorf("message %d: %v, want %q", id, err, tt.desc)
				}
			}
			if err := tt.call(999, 1); !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), "chat not found") {
				t.Errorf("unknown from_chat_id: %v, want chat not found", err)
			}
		})
	}
	if n := len(srv.Messages(8)); n != 0 {
		t.Errorf("messages in chat 8 = %d, want 0", n)
	}
}
