package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/stages"
	"github.com/countersign/countersign/tools"
)

// Sender delivers messages through the Bot API and says, for every failure, what
// happened to the request in the contract's terms. It waits on the rate limiter
// before each send, so that Telegram's flood limits are rarely hit.
type Sender struct {
	bot     *bot.Bot
	limiter *Limiter
	redact  func(string) string
	timeout time.Duration
}

var _ tools.Sender = (*Sender)(nil)

// Send implements tools.Sender. The text goes exactly as given; a parse mode only
// when the payload asks for one. Errors are *tools.RetryAfterError (429),
// *tools.RepairError (migrated chat, rejected entities, other fixable 400s),
// *tools.RefusedError (401, 403, 404, the other 400s), tools.ErrNotSent (the
// request never left), action.ErrFenced (the context's fence refused the write:
// nothing left) or tools.ErrOutcomeUnknown (it left and no answer says what
// became of it). No error carries the bot token.
func (s *Sender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	chat, err := chatID(m.Target)
	if err != nil {
		return tools.Delivery{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	return s.call(ctx, m.Target, func(ctx context.Context) (tools.Delivery, error) {
		return delivery(s.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chat, Text: m.Text, ParseMode: models.ParseMode(m.ParseMode)}))
	})
}

var _ tools.Editor = (*Sender)(nil)

// Edit implements tools.Editor: editMessageText, spaced by the rate limiter and
// fenced like a send. Its errors are Send's, and tools.ErrAlreadyDone when
// Telegram answers that the message already reads so ("message is not
// modified"): the edit is in the world.
func (s *Sender) Edit(ctx context.Context, e tools.Edit) (tools.Delivery, error) {
	chat, err := chatID(e.Target)
	if err != nil {
		return tools.Delivery{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	return s.call(ctx, e.Target, func(ctx context.Context) (tools.Delivery, error) {
		if e.Caption {
			return delivery(s.bot.EditMessageCaption(ctx, &bot.EditMessageCaptionParams{ChatID: chat, MessageID: int(e.MessageID), Caption: e.Text,
				ParseMode: models.ParseMode(e.ParseMode)}))
		}
		return delivery(s.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: int(e.MessageID), Text: e.Text,
			ParseMode: models.ParseMode(e.ParseMode)}))
	})
}

var _ tools.Deleter = (*Sender)(nil)

// Delete implements tools.Deleter: deleteMessage, spaced and fenced like a
// send. Its errors are Send's, and tools.ErrAlreadyDone when Telegram answers
// that the message is not there to delete: it is gone.
func (s *Sender) Delete(ctx context.Context, target string, messageID int64) error {
	chat, err := chatID(target)
	if err != nil {
		return &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	_, err = s.call(ctx, target, func(ctx context.Context) (tools.Delivery, error) {
		_, err := s.bot.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: chat, MessageID: int(messageID)})
		return tools.Delivery{}, err
	})
	return err
}

var _ tools.Pinner = (*Sender)(nil)

// Pin implements tools.Pinner: pinChatMessage, silent unless notify, spaced and
// fenced like a send.
func (s *Sender) Pin(ctx context.Context, target string, messageID int64, notify bool) error {
	chat, err := chatID(target)
	if err != nil {
		return &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	_, err = s.call(ctx, target, func(ctx context.Context) (tools.Delivery, error) {
		_, err := s.bot.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: chat, MessageID: int(messageID), DisableNotification: !notify})
		return tools.Delivery{}, err
	})
	return err
}

// Unpin implements tools.Pinner: unpinChatMessage, spaced and fenced like a send.
func (s *Sender) Unpin(ctx context.Context, target string, messageID int64) error {
	chat, err := chatID(target)
	if err != nil {
		return &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	_, err = s.call(ctx, target, func(ctx context.Context) (tools.Delivery, error) {
		_, err := s.bot.UnpinChatMessage(ctx, &bot.UnpinChatMessageParams{ChatID: chat, MessageID: int(messageID)})
		return tools.Delivery{}, err
	})
	return err
}

// Pinned implements tools.Pinner: getChat's pinned_message. A read changes
// nothing: it is neither spaced nor fenced, and its failure is classified as a
// send's.
func (s *Sender) Pinned(ctx context.Context, target string) (int64, error) {
	chat, err := chatID(target)
	if err != nil {
		return 0, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	info, err := s.bot.GetChat(ctx, &bot.GetChatParams{ChatID: chat})
	if err != nil {
		return 0, classify(err, true, s.redact)
	}
	if info.PinnedMessage == nil {
		return 0, nil
	}
	return int64(info.PinnedMessage.ID), nil
}

var _ tools.Chats = (*Sender)(nil)

// Audience implements tools.Chats: getChat's title (or a person's name),
// username and type. A read changes nothing: it is neither spaced nor fenced,
// and its failure is classified as a send's that never left.
func (s *Sender) Audience(ctx context.Context, target string) (action.Audience, error) {
	chat, err := chatID(target)
	if err != nil {
		return action.Audience{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	info, err := s.bot.GetChat(ctx, &bot.GetChatParams{ChatID: chat})
	if err != nil {
		return action.Audience{}, classify(err, false, s.redact)
	}
	return audienceOf(info), nil
}

// Right implements tools.Chats: getChatMember of the bot itself in chat, a
// chat of type kind. Read as Audience is.
func (s *Sender) Right(ctx context.Context, target, kind string) (tools.Right, error) {
	chat, err := chatID(target)
	if err != nil {
		return tools.Right{}, &tools.RefusedError{Reason: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.bot.GetChatMember(ctx, &bot.GetChatMemberParams{ChatID: chat, UserID: s.bot.ID()})
	if err != nil {
		return tools.Right{}, classify(err, false, s.redact)
	}
	return rightOf(m, kind), nil
}

// rightOf is what a bot's membership m lets it do in a chat of type kind: an
// owner posts; an administrator of a channel only with can_post_messages (a
// field the Bot API sends for channels only), of a group always; a member of
// a group posts, of a channel it is a subscriber; a restricted member only
// with can_send_messages; one that left or was removed does not.
func rightOf(m *models.ChatMember, kind string) tools.Right {
	channel := kind == string(models.ChatTypeChannel)
	switch m.Type {
	case models.ChatMemberTypeOwner:
		return tools.Right{May: true, Status: "its owner"}
	case models.ChatMemberTypeAdministrator:
		if channel && !m.Administrator.CanPostMessages {
			return tools.Right{Status: "an administrator without the right to post messages"}
		}
		return tools.Right{May: true, Status: "an administrator"}
	case models.ChatMemberTypeMember:
		if channel {
			return tools.Right{Status: "a subscriber, not an administrator"}
		}
		return tools.Right{May: true, Status: "a member"}
	case models.ChatMemberTypeRestricted:
		if m.Restricted.IsMember && m.Restricted.CanSendMessages {
			return tools.Right{May: true, Status: "a restricted member that may send messages"}
		}
		return tools.Right{Status: "restricted from sending messages"}
	case models.ChatMemberTypeLeft:
		return tools.Right{Status: "not a member any more"}
	case models.ChatMemberTypeBanned:
		return tools.Right{Status: "removed from the chat"}
	}
	return tools.Right{Status: "of status " + string(m.Type)}
}

// call makes one request that changes a message, as Send does: after the rate
// limiter's wait and the fence's check, bounded by the send timeout, its failure
// classified from whether the request was written.
func (s *Sender) call(ctx context.Context, target string, do func(context.Context) (tools.Delivery, error)) (tools.Delivery, error) {
	done, err := s.limiter.Wait(ctx, target)
	if err != nil {
		return tools.Delivery{}, fmt.Errorf("telegram: rate limiter: %w: %w", tools.ErrNotSent, err)
	}
	defer done() // the chat's next message is spaced from this answer
	// The last check before the write, after the limiter's wait: a replica that
	// lost the operation meanwhile (its lease ran out, its name lock went with
	// its database session) writes nothing.
	if err := action.CheckFence(ctx); err != nil {
		return tools.Delivery{}, fmt.Errorf("telegram: %w", err)
	}
	stages.Mark(ctx, stages.Proved)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, wrote := traceWrite(ctx)
	d, err := do(ctx)
	stages.Mark(ctx, stages.Answered)
	if err != nil {
		return tools.Delivery{}, classify(err, wrote.Load(), s.redact)
	}
	return d, nil
}

// delivery is where the message Telegram answered with is.
func delivery(m *models.Message, err error) (tools.Delivery, error) {
	if err != nil {
		return tools.Delivery{}, err
	}
	return tools.Delivery{ChatID: strconv.FormatInt(m.Chat.ID, 10), MessageID: int64(m.ID)}, nil
}

// chatID turns a target into what the Bot API takes: an int64 id or "@username".
func chatID(target string) (any, error) {
	if strings.HasPrefix(target, "@") {
		return target, nil
	}
	id, err := strconv.ParseInt(target, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a chat id or @username", target)
	}
	return id, nil
}

// traceWrite reports, through the returned flag, whether the whole request was
// written to the connection: the line between "never sent" and "unknown".
func traceWrite(ctx context.Context) (context.Context, *atomic.Bool) {
	wrote := new(atomic.Bool)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}), wrote
}

// classify maps a Bot API failure to the contract. Telegram gives 400s no finer
// code than their description, so the fixable ones are told apart by it.
func classify(err error, wrote bool, redact func(string) string) error {
	clean := errors.New(redact(err.Error()))
	var (
		tmr *bot.TooManyRequestsError
		mig *bot.MigrateError
	)
	switch {
	case errors.As(err, &tmr):
		return &tools.RetryAfterError{After: time.Duration(tmr.RetryAfter) * time.Second, Err: clean}
	case errors.As(err, &mig):
		return &tools.RepairError{Fix: &action.Fix{Target: strconv.Itoa(mig.MigrateToChatID)},
			Reason: "the group became a supergroup", Err: clean}
	case errors.Is(err, bot.ErrorBadRequest):
		return badRequest(clean)
	case errors.Is(err, bot.ErrorUnauthorized):
		return &tools.RefusedError{Reason: "Telegram rejected the bot token", Err: clean}
	case errors.Is(err, bot.ErrorForbidden):
		return &tools.RefusedError{Reason: "Telegram refused: " + description(clean, bot.ErrorForbidden), Err: clean}
	case errors.Is(err, bot.ErrorNotFound):
		return &tools.RefusedError{Reason: "Telegram answered not found", Err: clean}
	case !wrote:
		return fmt.Errorf("telegram: %w: %w", tools.ErrNotSent, clean)
	}
	// Written, and no answer that says it failed: a 5xx, a timeout, a dropped
	// connection, a proxy's HTML page. Telegram may have delivered it.
	return fmt.Errorf("telegram: %w: %w", tools.ErrOutcomeUnknown, clean)
}

func badRequest(clean error) error {
	desc := description(clean, bot.ErrorBadRequest)
	lower := strings.ToLower(desc)
	switch {
	case strings.Contains(lower, "can't parse entities"):
		return &tools.RepairError{Fix: &action.Fix{PlainText: true}, Reason: "Telegram rejected the formatting; sending as plain text", Err: clean}
	case strings.Contains(lower, "message is not modified"), strings.Contains(lower, "message to delete not found"):
		return fmt.Errorf("telegram: %w: %w", tools.ErrAlreadyDone, clean)
	case strings.Contains(lower, "message is too long"), strings.Contains(lower, "text is empty"):
		return &tools.RepairError{Reason: "Telegram refused the text: " + desc, Err: clean}
	}
	return &tools.RefusedError{Reason: "Telegram refused: " + desc, Err: clean}
}

// description is the Bot API's description out of the library's error text.
func description(err, sentinel error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), sentinel.Error()), ", ")
}
