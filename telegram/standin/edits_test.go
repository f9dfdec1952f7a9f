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

func TestEditMessageCaption(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	photo, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", pngOf(t, 20, 20, 1)), Caption: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	edit := &bot.EditMessageCaptionParams{ChatID: 7, MessageID: photo.ID, Caption: "<i>final</i>", ParseMode: models.ParseModeHTML}
	m, err := b.EditMessageCaption(ctx, edit)
	if err != nil {
		t.Fatalf("EditMessageCaption: %v", err)
	}
	if m.Caption != "final" || len(m.CaptionEntities) != 1 || m.EditDate == 0 || len(m.Photo) != 1 {
		t.Errorf("edited = %+v, want the parsed caption on the same photo", m)
	}
	if stored, _ := srv.Message(7, photo.ID); stored.Caption != "final" || stored.Edits != 1 {
		t.Errorf("stored = %+v, want one edit", stored)
	}
	_, err = b.EditMessageCaption(ctx, edit)
	want := "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("same caption again: %v, want %q", err, want)
	}
	edit.Caption = strings.Repeat("a", 1025)
	if _, err := b.EditMessageCaption(ctx, edit); !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), "message caption is too long") {
		t.Errorf("long caption: %v, want message caption is too long", err)
	}
}

func TestEditRejections(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	text, _ := sendText(ctx, b, 7, "plain")
	photo, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", pngOf(t, 20, 20, 1))})
	if err != nil {
		t.Fatal(err)
	}
	srv.PushMessage(7, 7, "the user's")
	users := photo.ID + 1
	editText := func(id int, s string) error {
		_, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: 7, MessageID: id, Text: s})
		return err
	}
	editCaption := func(id int, s string) error {
		_, err := b.EditMessageCaption(ctx, &bot.EditMessageCaptionParams{ChatID: 7, MessageID: id, Caption: s})
		return err
	}
	tests := []struct {
		name string
		err  error
		desc string
	}{
		{"text to its current text", editText(text.ID, "plain"), "Bad Request: message is not modified: specified new message content"},
		{"text of a missing message", editText(99, "x"), "Bad Request: message to edit not found"},
		{"text of the user's message", editText(users, "x"), "Bad Request: message can't be edited"},
		{"text of a photo", editText(photo.ID, "x"), "Bad Request: there is no text in the message to edit"},
		{"caption of a text message", editCaption(text.ID, "x"), "Bad Request: there is no caption in the message to edit"},
		{"caption of a missing message", editCaption(99, "x"), "Bad Request: message to edit not found"},
		{"caption of the user's message", editCaption(users, "x"), "Bad Request: message can't be edited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, bot.ErrorBadRequest) || !strings.Contains(tt.err.Error(), tt.desc) {
				t.Errorf("error = %v, want %q", tt.err, tt.desc)
			}
		})
	}
}

func TestDeleteMessageRules(t *testing.T) {
	tests := []struct {
		name    string
		chat    int64
		age     time.Duration
		twice   bool
		userMsg bool
		desc    string // empty: deleted
	}{
		{"group, 47 hours old", -4001, 47 * time.Hour, false, false, ""},
		{"group, 48 hours old", -4001, 48 * time.Hour, false, false, "Bad Request: message can't be deleted for everyone"},
		{"supergroup, 3 days old", -1001557912345, 72 * time.Hour, false, false, "Bad Request: message can't be deleted for everyone"},
		{"private chat, 3 days old", 7, 72 * time.Hour, false, false, ""},
		{"already deleted", 7, 0, true, false, "Bad Request: message to delete not found"},
		{"user's message in a private chat", 7, 0, false, true, ""},
		{"user's message in a group", -4001, 0, false, true, "Bad Request: message can't be deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			srv := newServer(t, standin.Options{Now: clock.Now})
			b, _ := newBot(t, srv, 3*time.Second)
			ctx := context.Background()
			id := 1
			if tt.userMsg {
				srv.PushMessage(7, tt.chat, "hello")
			} else if _, err := sendText(ctx, b, tt.chat, "hello"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(tt.age)
			params := &bot.DeleteMessageParams{ChatID: tt.chat, MessageID: id}
			if tt.twice {
				if _, err := b.DeleteMessage(ctx, params); err != nil {
					t.Fatal(err)
				}
			}
			ok, err := b.DeleteMessage(ctx, params)
			switch {
			case tt.desc == "" && (!ok || err != nil):
				t.Errorf("delete = %v, %v; want true", ok, err)
			case tt.desc != "" && (!errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), tt.desc)):
				t.Errorf("delete: %v, want %q", err, tt.desc)
			}
		})
	}
}

func TestFaultsAndRecordsOnMediaMethods(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	srv.Inject(standin.TooManyRequests(7).For("sendPhoto"))
	_, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", pngOf(t, 20, 20, 1))})
	var tmr *bot.TooManyRequestsError
	if !errors.As(err, &tmr) || tmr.RetryAfter != 7 {
		t.Errorf("sendPhoto with a 429 fault: %v, want retry after 7", err)
	}

	srv.Inject(standin.AcceptThenDrop().For("sendMediaGroup"))
	_, err = b.SendMediaGroup(ctx, &bot.SendMediaGroupParams{ChatID: 7, Media: []models.InputMedia{albumPhoto(t, "a", 1, ""), albumPhoto(t, "b", 2, "")}})
	if err == nil {
		t.Error("album with a dropped reply: nil error")
	}
	msgs := srv.Messages(7)
	if len(msgs) != 2 || !msgs[0].ReplyLost || !msgs[1].ReplyLost {
		t.Errorf("messages = %+v, want the album committed with its reply lost", msgs)
	}
	waitFor(t, srv, "the album call to finish", func(s *standin.Server) bool { return s.CallsTo("sendMediaGroup")[0].Done })

	srv.Inject(standin.BadGateway().For("pinChatMessage"))
	if _, err := b.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: 7, MessageID: 1}); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("pin with a 502 fault: %v", err)
	}
	if got := srv.Pinned(7); len(got) != 0 {
		t.Errorf("pinned = %v, want nothing after the refused call", got)
	}
	for _, method := range []string{"sendPhoto", "sendMediaGroup", "pinChatMessage"} {
		if calls := srv.CallsTo(method); len(calls) != 1 || calls[0].ChatID != 7 {
			t.Errorf("%s calls = %+v, want one to chat 7", method, calls)
		}
	}
}
