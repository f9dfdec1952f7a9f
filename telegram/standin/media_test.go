package standin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

// pngOf encodes a w×h PNG; seed makes different images of the same size.
func pngOf(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = seed + byte(i)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func upload(name string, data []byte) *models.InputFileUpload {
	return &models.InputFileUpload{Filename: name, Data: bytes.NewReader(data)}
}

func TestSendPhotoUpload(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	img := pngOf(t, 1000, 500, 1)

	m, err := b.SendPhoto(ctx, &bot.SendPhotoParams{
		ChatID: 7, Photo: upload("chart.png", img), Caption: "<b>Q3</b> chart", ParseMode: models.ParseModeHTML,
	})
	if err != nil {
		t.Fatalf("SendPhoto: %v", err)
	}
	var dims []string
	for _, p := range m.Photo {
		dims = append(dims, fmt.Sprintf("%dx%d", p.Width, p.Height))
		if p.FileID == "" || p.FileUniqueID == "" || p.FileSize == 0 {
			t.Errorf("photo size %+v lacks ids or size", p)
		}
	}
	if got, want := strings.Join(dims, " "), "90x45 320x160 800x400 1000x500"; got != want {
		t.Errorf("photo sizes = %s, want %s", got, want)
	}
	if last := m.Photo[len(m.Photo)-1]; last.FileSize != len(img) {
		t.Errorf("largest size file_size = %d, want the upload's %d", last.FileSize, len(img))
	}
	if m.Caption != "Q3 chart" || len(m.CaptionEntities) != 1 || m.CaptionEntities[0].Type != models.MessageEntityTypeBold || m.Text != "" {
		t.Errorf("caption = %q %+v text %q, want parsed caption and no text", m.Caption, m.CaptionEntities, m.Text)
	}

	again, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 8, Photo: upload("same.png", img)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := again.Photo[0].FileUniqueID, m.Photo[0].FileUniqueID; got != want {
		t.Errorf("same bytes: file_unique_id %s, want %s", got, want)
	}
	other, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 8, Photo: upload("other.png", pngOf(t, 1000, 500, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if other.Photo[0].FileUniqueID == m.Photo[0].FileUniqueID {
		t.Error("different bytes got the same file_unique_id")
	}

	calls := srv.CallsTo("sendPhoto")
	sum := sha256.Sum256(img)
	want := standin.Upload{FileName: "chart.png", Size: len(img), SHA256: hex.EncodeToString(sum[:])}
	if got := calls[0].Uploads["photo"]; got != want {
		t.Errorf("call upload = %+v, want %+v", got, want)
	}
	if _, ok := calls[0].Params["photo"]; ok {
		t.Errorf("params hold the photo: %q", calls[0].Params["photo"][:min(20, len(calls[0].Params["photo"]))])
	}
	if stored, _ := srv.Message(7, m.ID); len(stored.Photo) != 4 || stored.RawText != "<b>Q3</b> chart" {
		t.Errorf("stored = %+v, want the photo and the raw caption", stored)
	}
}

func TestSendPhotoByFileIDAndURL(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	img := pngOf(t, 64, 48, 3)
	first, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", img)})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Photo) != 1 || first.Photo[0].Width != 64 {
		t.Fatalf("small photo sizes = %+v, want one 64x48", first.Photo)
	}

	byID, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 9, Photo: &models.InputFileString{Data: first.Photo[0].FileID}})
	if err != nil {
		t.Fatalf("by file_id: %v", err)
	}
	if byID.Photo[0].FileUniqueID != first.Photo[0].FileUniqueID {
		t.Errorf("by file_id: %+v, want the same photo", byID.Photo)
	}

	srv.SetURLContent("https://example.com/cat.png", img)
	byURL, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: 9, Photo: &models.InputFileString{Data: "https://example.com/cat.png"}})
	if err != nil {
		t.Fatalf("by URL: %v", err)
	}
	if byURL.Photo[0].FileUniqueID != first.Photo[0].FileUniqueID {
		t.Errorf("by URL: %+v, want the same content's ids", byURL.Photo)
	}
	if got := srv.CallsTo("sendPhoto")[2].Params["photo"]; got != "https://example.com/cat.png" {
		t.Errorf("recorded photo param = %q, want the URL", got)
	}
}

func TestSendDocument(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	data := []byte("%PDF-1.7 quarterly report")
	m, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: 7, Document: upload("report.pdf", data), Caption: "Q3"})
	if err != nil {
		t.Fatalf("SendDocument: %v", err)
	}
	d := m.Document
	if d == nil || d.FileName != "report.pdf" || d.MimeType != "application/pdf" || d.FileSize != int64(len(data)) || d.FileID == "" || m.Caption != "Q3" {
		t.Fatalf("document = %+v caption %q, want report.pdf, application/pdf, %d bytes", d, m.Caption, len(data))
	}
	again, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: 7, Document: &models.InputFileString{Data: d.FileID}})
	if err != nil || again.Document.FileUniqueID != d.FileUniqueID || again.Document.FileName != "report.pdf" {
		t.Errorf("by file_id: %+v, %v; want the same document", again.Document, err)
	}
	if _, doc, ok := srv.File(d.FileID); !ok || doc.FileName != "report.pdf" {
		t.Errorf("File(%s) = %+v, %v", d.FileID, doc, ok)
	}
}

func TestSendMediaRejections(t *testing.T) {
	img := pngOf(t, 10, 10, 0)
	tests := []struct {
		name   string
		send   func(b *bot.Bot, photoID string) error
		is     error
		status int
		desc   string
	}{
		{"photo over the upload limit", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: upload("big.png", make([]byte, 2001))})
			return err
		}, nil, 413, "Request Entity Too Large"},
		{"document over the upload limit", func(b *bot.Bot, _ string) error {
			_, err := b.SendDocument(context.Background(), &bot.SendDocumentParams{ChatID: 7, Document: upload("big.bin", make([]byte, 3001))})
			return err
		}, nil, 413, "Request Entity Too Large"},
		{"empty file", func(b *bot.Bot, _ string) error {
			_, err := b.SendDocument(context.Background(), &bot.SendDocumentParams{ChatID: 7, Document: upload("empty.txt", nil)})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: file must be non-empty"},
		{"caption too long", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", img), Caption: strings.Repeat("😀", 513)})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: message caption is too long"},
		{"not an image", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", []byte("not a png"))})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: IMAGE_PROCESS_FAILED"},
		{"too narrow", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: upload("a.png", pngOf(t, 1, 30, 0))})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: PHOTO_INVALID_DIMENSIONS"},
		{"unknown file_id", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: &models.InputFileString{Data: "AgACAgIAAxkBAAInvalid"}})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: wrong file identifier/HTTP URL specified"},
		{"photo file_id as a document", func(b *bot.Bot, photoID string) error {
			_, err := b.SendDocument(context.Background(), &bot.SendDocumentParams{ChatID: 7, Document: &models.InputFileString{Data: photoID}})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: type of file mismatch"},
		{"unreachable URL", func(b *bot.Bot, _ string) error {
			_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: &models.InputFileString{Data: "https://example.com/none.png"}})
			return err
		}, bot.ErrorBadRequest, 400, "Bad Request: failed to get HTTP URL content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{Uploads: standin.UploadLimits{Photo: 2000, Document: 3000}})
			b, _ := newBot(t, srv, 3*time.Second)
			seed, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 1, Photo: upload("seed.png", img)})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.send(b, seed.Photo[0].FileID)
			if err == nil || !strings.HasSuffix(err.Error(), tt.desc) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("error = %v, want %v %q", err, tt.is, tt.desc)
			}
			calls := srv.Calls()
			if got := calls[len(calls)-1].Status; got != tt.status {
				t.Errorf("status = %d, want %d", got, tt.status)
			}
			if n := len(srv.Messages(7)); n != 0 {
				t.Errorf("messages in chat 7 = %d, want 0", n)
			}
		})
	}
}

func TestSendPhotoDefaultLimit(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{ChatID: 7, Photo: upload("huge.png", make([]byte, 10<<20+1))})
	if err == nil || !strings.Contains(err.Error(), "413 Request Entity Too Large") {
		t.Errorf("10 MB + 1 photo: %v, want 413 Request Entity Too Large", err)
	}
	if got := srv.CallsTo("sendPhoto")[0].Uploads["photo"].Size; got != 10<<20+1 {
		t.Errorf("recorded size = %d, want %d", got, 10<<20+1)
	}
}
