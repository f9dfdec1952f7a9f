package standin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

// albumPhoto is an album item uploaded as attach://name.
func albumPhoto(t *testing.T, name string, seed byte, caption string) models.InputMedia {
	return &models.InputMediaPhoto{Media: "attach://" + name, MediaAttachment: bytes.NewReader(pngOf(t, 40, 30, seed)), Caption: caption}
}

func TestSendMediaGroup(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	before, err := sendText(ctx, b, 7, "before")
	if err != nil {
		t.Fatal(err)
	}

	msgs, err := b.SendMediaGroup(ctx, &bot.SendMediaGroupParams{ChatID: 7, Media: []models.InputMedia{
		albumPhoto(t, "p1", 1, "first"),
		albumPhoto(t, "p2", 2, ""),
		&models.InputMediaDocument{Media: "attach://notes.txt", MediaAttachment: strings.NewReader("notes"), Caption: "*notes*", ParseMode: models.ParseModeMarkdown},
	}})
	if err != nil {
		t.Fatalf("SendMediaGroup: %v", err)
	}
	if len(msgs) != 3 {
		t.Fatalf("messages = %d, want 3", len(msgs))
	}
	group := msgs[0].MediaGroupID
	for i, m := range msgs {
		if m.ID != before.ID+1+i || m.MediaGroupID == "" || m.MediaGroupID != group {
			t.Errorf("item %d: id %d group %q, want id %d in group %q", i, m.ID, m.MediaGroupID, before.ID+1+i, group)
		}
	}
	if msgs[0].Caption != "first" || len(msgs[0].Photo) != 1 || msgs[2].Document == nil || msgs[2].Document.FileName != "notes.txt" ||
		msgs[2].Caption != "notes" || len(msgs[2].CaptionEntities) != 1 {
		t.Errorf("items = %+v / %+v, want a captioned photo and a parsed document caption", msgs[0], msgs[2])
	}
	call := srv.CallsTo("sendMediaGroup")[0]
	if got := call.Uploads["p2"]; got.FileName != "p2" || got.Size == 0 || len(got.SHA256) != 64 {
		t.Errorf("upload p2 = %+v, want its name, size and digest", got)
	}
	if !strings.Contains(call.Params["media"], `"media":"attach://p1"`) {
		t.Errorf("media param = %s, want the attach:// references", call.Params["media"])
	}
	if got := len(srv.Messages(7)); got != 4 {
		t.Errorf("stored messages = %d, want 4", got)
	}
}

func TestSendMediaGroupRejections(t *testing.T) {
	photos := func(t *testing.T, n int) []models.InputMedia {
		var out []models.InputMedia
		for i := range n {
			out = append(out, albumPhoto(t, fmt.Sprintf("p%d", i), byte(i), ""))
		}
		return out
	}
	tests := []struct {
		name  string
		media func(t *testing.T) []models.InputMedia
		desc  string
	}{
		{"one item", func(t *testing.T) []models.InputMedia { return photos(t, 1) }, "media must contain 2-10 items"},
		{"eleven items", func(t *testing.T) []models.InputMedia { return photos(t, 11) }, "too much messages to send as an album"},
		{"caption too long", func(t *testing.T) []models.InputMedia {
			return append(photos(t, 1), albumPhoto(t, "long", 9, strings.Repeat("x", 1025)))
		}, "message caption is too long"},
		{"empty upload", func(t *testing.T) []models.InputMedia {
			return append(photos(t, 1), &models.InputMediaDocument{Media: "attach://empty", MediaAttachment: strings.NewReader("")})
		}, "file must be non-empty"},
		{"unknown file_id", func(t *testing.T) []models.InputMedia {
			return append(photos(t, 1), &models.InputMediaPhoto{Media: "AgACAgIAAxkBAAIunknown"})
		}, "wrong file identifier/HTTP URL specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{})
			b, _ := newBot(t, srv, 3*time.Second)
			_, err := b.SendMediaGroup(context.Background(), &bot.SendMediaGroupParams{ChatID: 7, Media: tt.media(t)})
			if !errors.Is(err, bot.ErrorBadRequest) || !strings.HasSuffix(err.Error(), tt.desc) {
				t.Errorf("error = %v, want bad request %q", err, tt.desc)
			}
			if n := len(srv.Messages(7)); n != 0 {
				t.Errorf("messages = %d, want 0", n)
			}
		})
	}
}

func TestSendMediaGroupCountsItemsAgainstFloodLimits(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, Flood: &standin.FloodLimits{}})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	if _, err := b.SendMediaGroup(ctx, &bot.SendMediaGroupParams{ChatID: 7, Media: []models.InputMedia{
		albumPhoto(t, "a", 1, ""), albumPhoto(t, "b", 2, ""), albumPhoto(t, "c", 3, ""), albumPhoto(t, "d", 4, ""),
	}}); err != nil {
		t.Fatalf("album within the burst: %v", err)
	}
	// Four items took the chat's burst of 3 and one more: the next message
	// waits two seconds.
	var tmr *bot.TooManyRequestsError
	if _, err := sendText(ctx, b, 7, "after"); !errors.As(err, &tmr) || tmr.RetryAfter != 2 {
		t.Errorf("message after the album: %v, want retry after 2", err)
	}
	clock.Advance(2 * time.Second)
	if _, err := sendText(ctx, b, 7, "later"); err != nil {
		t.Errorf("message 2s later: %v", err)
	}
}
