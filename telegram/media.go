package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/tools"
)

var _ tools.Uploader = (*Sender)(nil)

// Upload implements tools.Uploader: one file with sendPhoto or sendDocument, an
// album with sendMediaGroup, each file uploaded from its bytes (multipart), so
// that what leaves is the stored, approved content. It is spaced and fenced
// like a send, and its errors are Send's.
func (s *Sender) Upload(ctx context.Context, u tools.Upload) ([]tools.Delivery, error) {
	chat, err := chatID(u.Target)
	if err != nil {
		return nil, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	if len(u.Files) == 0 {
		err := errors.New("an upload without a file")
		return nil, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	var out []tools.Delivery
	_, err = s.call(ctx, u.Target, func(ctx context.Context) (tools.Delivery, error) {
		if len(u.Files) > 1 {
			ms, err := s.bot.SendMediaGroup(ctx, &bot.SendMediaGroupParams{ChatID: chat, Media: album(u)})
			if err != nil {
				return tools.Delivery{}, err
			}
			for _, m := range ms {
				out = append(out, tools.Delivery{ChatID: strconv.FormatInt(m.Chat.ID, 10), MessageID: int64(m.ID)})
			}
			return tools.Delivery{}, nil
		}
		f := u.Files[0]
		file := &models.InputFileUpload{Filename: f.Name, Data: bytes.NewReader(f.Data)}
		var d tools.Delivery
		var err error
		if f.Kind == action.FilePhoto {
			d, err = delivery(s.bot.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chat, Photo: file, Caption: u.Caption, ParseMode: models.ParseMode(u.ParseMode)}))
		} else {
			d, err = delivery(s.bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chat, Document: file, Caption: u.Caption, ParseMode: models.ParseMode(u.ParseMode)}))
		}
		out = append(out, d)
		return d, err
	})
	// Telegram counts each item of an album against its limits: the next
	// sends wait as if the items had gone one by one, whenever the album may
	// have landed.
	if err == nil || errors.Is(err, tools.ErrOutcomeUnknown) {
		s.limiter.Spend(u.Target, len(u.Files))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// album is an upload's files as sendMediaGroup takes them, each attached by
// its own part; the caption goes with the first item unless items carry their
// own.
func album(u tools.Upload) []models.InputMedia {
	media := make([]models.InputMedia, len(u.Files))
	for i, f := range u.Files {
		caption, mode := f.Caption, u.ParseMode
		if i == 0 && caption == "" {
			caption = u.Caption
		}
		ref, data := "attach://file"+strconv.Itoa(i), bytes.NewReader(f.Data)
		if f.Kind == action.FilePhoto {
			media[i] = &models.InputMediaPhoto{Media: ref, MediaAttachment: data, Caption: caption, ParseMode: models.ParseMode(mode)}
		} else {
			media[i] = &models.InputMediaDocument{Media: ref, MediaAttachment: data, Caption: caption, ParseMode: models.ParseMode(mode)}
		}
	}
	return media
}

var _ tools.Downloader = (*Sender)(nil)

// Download implements tools.Downloader: getFile, then the file's bytes from
// the Bot API's file address. The address holds the token, so no error names
// it; the caller bounds what it reads.
func (s *Sender) Download(ctx context.Context, fileID string) (io.ReadCloser, string, error) {
	getCtx, cancel := context.WithTimeout(ctx, s.timeout)
	f, err := s.bot.GetFile(getCtx, &bot.GetFileParams{FileID: fileID})
	cancel()
	if err != nil {
		return nil, "", classify(err, true, s.redact)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, "", errors.New("telegram: the file's address is not valid")
	}
	resp, err := downloads.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("telegram: download the file: %s", s.redact(err.Error()))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, "", fmt.Errorf("telegram: download the file: %s", resp.Status)
	}
	return resp.Body, path.Base(f.FilePath), nil
}

// downloads fetches attachments: bounded in time, as the body is read by the
// caller after Download returns.
var downloads = &http.Client{Timeout: 2 * time.Minute}

var _ tools.Poller = (*Sender)(nil)

// SendPoll implements tools.Poller: sendPoll, spaced and fenced like a send.
func (s *Sender) SendPoll(ctx context.Context, target, question string, p action.Poll) (tools.Delivery, error) {
	chat, err := chatID(target)
	if err != nil {
		return tools.Delivery{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	options := make([]models.InputPollOption, len(p.Options))
	for i, o := range p.Options {
		options[i] = models.InputPollOption{Text: o}
	}
	anonymous := !p.Public
	return s.call(ctx, target, func(ctx context.Context) (tools.Delivery, error) {
		return delivery(s.bot.SendPoll(ctx, &bot.SendPollParams{ChatID: chat, Question: question, Options: options,
			IsAnonymous: &anonymous, AllowsMultipleAnswers: p.Multiple}))
	})
}

var _ tools.Reposter = (*Sender)(nil)

// Repost implements tools.Reposter: forwardMessage, or copyMessage for a copy,
// spaced and fenced like a send.
func (s *Sender) Repost(ctx context.Context, target, from string, messageID int64, copy bool) (tools.Delivery, error) {
	chat, err := chatID(target)
	if err == nil {
		_, err = chatID(from)
	}
	if err != nil {
		return tools.Delivery{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	source, _ := chatID(from)
	return s.call(ctx, target, func(ctx context.Context) (tools.Delivery, error) {
		if copy {
			id, err := s.bot.CopyMessage(ctx, &bot.CopyMessageParams{ChatID: chat, FromChatID: source, MessageID: int(messageID)})
			if err != nil {
				return tools.Delivery{}, err
			}
			return tools.Delivery{ChatID: target, MessageID: int64(id.ID)}, nil
		}
		return delivery(s.bot.ForwardMessage(ctx, &bot.ForwardMessageParams{ChatID: chat, FromChatID: source, MessageID: int(messageID)}))
	})
}
