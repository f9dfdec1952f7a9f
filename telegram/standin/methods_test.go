package standin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

func approveKeyboard(op string) *models.InlineKeyboardMarkup {
	return &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{
		{Text: "Approve", CallbackData: "ap:" + op},
		{Text: "Reject", CallbackData: "rj:" + op},
	}}}
}

func TestSendMessage(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()

	m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 777, Text: "Approve op 42?", ReplyMarkup: approveKeyboard("42")})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if m.ID != 1 || m.Chat.ID != 777 || m.Chat.Type != models.ChatTypePrivate || m.Text != "Approve op 42?" || m.Date == 0 {
		t.Errorf("returned message = %+v, want id 1 in private chat 777 with the text and a date", m)
	}
	if m.From == nil || !m.From.IsBot || m.From.ID != srv.Bot().ID {
		t.Errorf("from = %+v, want the bot", m.From)
	}
	if m.ReplyMarkup == nil || len(m.ReplyMarkup.InlineKeyboard) != 1 || m.ReplyMarkup.InlineKeyboard[0][1].CallbackData != "rj:42" {
		t.Errorf("reply markup = %+v, want the keyboard back", m.ReplyMarkup)
	}

	second, err := sendText(ctx, b, 777, "second")
	if err != nil {
		t.Fatal(err)
	}
	other, err := sendText(ctx, b, 222, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != 2 || other.ID != 1 {
		t.Errorf("message ids = %d, %d; want 2 in chat 777 and 1 in chat 222", second.ID, other.ID)
	}
	got := srv.Messages(777)
	if len(got) != 2 || got[0].Text != "Approve op 42?" || got[1].Text != "second" || got[0].Chat.ID != 777 {
		t.Errorf("Messages(777) = %+v, want the two texts", got)
	}
	if all := srv.AllMessages(); len(all) != 3 || all[2].Chat.ID != 222 {
		t.Errorf("AllMessages = %+v, want 3 in send order", all)
	}
}

// keysOf lists the keys of a JSON object.
func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func field(t *testing.T, raw json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	return m[name]
}

// sameKeys compares the keys of a result, its "from" and its "chat" with a
// fixture's, leaving out the optional fields the fixture happens to have.
func sameKeys(t *testing.T, got, want json.RawMessage) {
	t.Helper()
	for _, path := range []string{"", "from", "chat"} {
		g, w := got, want
		if path != "" {
			g, w = field(t, g, path), field(t, w, path)
		}
		gotKeys, wantKeys := keysOf(t, g), keysOf(t, w)
		wantKeys = slices.DeleteFunc(wantKeys, func(k string) bool { return k == "entities" || k == "link_preview_options" })
		if !slices.Equal(gotKeys, wantKeys) {
			t.Errorf("result.%s keys = %v, want %v", path, gotKeys, wantKeys)
		}
	}
}

func TestResultsMatchFixtureShapes(t *testing.T) {
	srv := newServer(t, standin.Options{
		Chats: []standin.Chat{{ID: 123456789, Type: "private", FirstName: "Nathan", LastName: "W", Username: "n8n"}},
	})
	sent := post(t, srv, "sendMessage", url.Values{"chat_id": {"123456789"}, "text": {"a"}})
	sameKeys(t, sent.Result, fixtureReply(t, "sendMessage_ok.json").Result)

	edited := post(t, srv, "editMessageText", url.Values{"chat_id": {"123456789"}, "message_id": {"1"}, "text": {"test"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"foo","callback_data":"callback"},{"text":"n8n","url":"https://n8n.io/"}]]}`}})
	want := fixtureReply(t, "editMessageText_ok_inline_keyboard.json").Result
	sameKeys(t, edited.Result, want)
	if got, want := compactJSON(t, field(t, edited.Result, "reply_markup")), compactJSON(t, field(t, want, "reply_markup")); got != want {
		t.Errorf("reply_markup = %s, want %s", got, want)
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSendMessageRejections(t *testing.T) {
	long := strings.Repeat("a", 4097)
	emojis := strings.Repeat("😀", 2049) // 4098 UTF-16 units, 2049 characters
	tests := []struct {
		name   string
		chat   int64
		params *bot.SendMessageParams
		is     error
		desc   string
	}{
		{"too long", 777, &bot.SendMessageParams{Text: long}, bot.ErrorBadRequest, "Bad Request: message is too long"},
		{"too long in UTF-16", 777, &bot.SendMessageParams{Text: emojis}, bot.ErrorBadRequest, "Bad Request: message is too long"},
		{"empty", 777, &bot.SendMessageParams{Text: ""}, bot.ErrorBadRequest, "Bad Request: message text is empty"},
		{"blank", 777, &bot.SendMessageParams{Text: " \n "}, bot.ErrorBadRequest, "Bad Request: message text is empty"},
		{"unknown chat", 999, &bot.SendMessageParams{Text: "hi"}, bot.ErrorBadRequest, "Bad Request: chat not found"},
		{"blocked", 666, &bot.SendMessageParams{Text: "hi"}, bot.ErrorForbidden, "Forbidden: bot was blocked by the user"},
		{"unbalanced HTML", 777, &bot.SendMessageParams{Text: "<b>bold", ParseMode: models.ParseModeHTML},
			bot.ErrorBadRequest, `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`},
		{"bare < in HTML", 777, &bot.SendMessageParams{Text: "1 <x> 2", ParseMode: models.ParseModeHTML},
			bot.ErrorBadRequest, `Bad Request: can't parse entities: Unsupported start tag "x" at byte offset 2`},
		{"unescaped MarkdownV2", 777, &bot.SendMessageParams{Text: "Version 1.0", ParseMode: models.ParseModeMarkdown},
			bot.ErrorBadRequest, `Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`},
		{"unknown parse mode", 777, &bot.SendMessageParams{Text: "x", ParseMode: "BBCode"}, bot.ErrorBadRequest, "Bad Request: unsupported parse_mode"},
		{"callback data over 64 bytes", 777, &bot.SendMessageParams{Text: "x", ReplyMarkup: approveKeyboard(strings.Repeat("9", 62))},
			bot.ErrorBadRequest, "Bad Request: BUTTON_DATA_INVALID"},
		{"button without action", 777, &bot.SendMessageParams{Text: "x", ReplyMarkup: &models.InlineKeyboardMarkup{
			InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "nothing"}}}}},
			bot.ErrorBadRequest, "Bad Request: can't parse InlineKeyboardButton: Text buttons are not allowed in the inline keyboard"},
	}
	srv := newServer(t, standin.Options{
		Chats:        []standin.Chat{{ID: 777}, {ID: 666}},
		BlockedChats: []int64{666},
	})
	b, _ := newBot(t, srv, 3*time.Second)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params.ChatID = tt.chat
			_, err := b.SendMessage(context.Background(), tt.params)
			if !errors.Is(err, tt.is) || !strings.HasSuffix(err.Error(), ", "+tt.desc) {
				t.Errorf("error = %v, want %v with %q", err, tt.is, tt.desc)
			}
			if n := len(srv.Messages(tt.chat)); n != 0 {
				t.Errorf("messages = %d, want 0", n)
			}
		})
	}
}

func TestSendMessageAtTheLimits(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	for _, text := range []string{strings.Repeat("a", 4096), strings.Repeat("😀", 2048)} {
		if _, err := sendText(context.Background(), b, 1, text); err != nil {
			t.Errorf("%d characters: %v, want accepted", len([]rune(text)), err)
		}
	}
}

func TestSendMessageMigratedGroup(t *testing.T) {
	srv := newServer(t, standin.Options{MigratedChats: map[int64]int64{-4001: -1001557912345}})
	b, _ := newBot(t, srv, 3*time.Second)

	_, err := sendText(context.Background(), b, -4001, "hi")
	var migrate *bot.MigrateError
	if !errors.As(err, &migrate) || migrate.MigrateToChatID != -1001557912345 {
		t.Fatalf("error = %v, want MigrateError to -1001557912345", err)
	}
	m, err := sendText(context.Background(), b, int64(migrate.MigrateToChatID), "hi again")
	if err != nil || m.Chat.Type != models.ChatTypeSupergroup {
		t.Fatalf("send to the supergroup: %+v, %v; want accepted in a supergroup", m, err)
	}
}

func TestSendMessageParsesEntities(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	m, err := b.SendMessage(context.Background(), &bot.SendMessageParams{
		ChatID: 1, Text: "<b>Approve</b> op &lt;42&gt;", ParseMode: models.ParseModeHTML,
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "Approve op <42>" || len(m.Entities) != 1 || m.Entities[0].Type != models.MessageEntityTypeBold || m.Entities[0].Length != 7 {
		t.Errorf("message = %q %+v, want plain text and one bold entity", m.Text, m.Entities)
	}
	stored, _ := srv.Message(1, m.ID)
	if stored.RawText != "<b>Approve</b> op &lt;42&gt;" || stored.ParseMode != "HTML" {
		t.Errorf("stored = %+v, want the raw text and parse mode kept", stored)
	}
}

func TestEditMessageText(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	sent, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 7, Text: "Approve op 42?", ReplyMarkup: approveKeyboard("42")})
	if err != nil {
		t.Fatal(err)
	}
	edit := &bot.EditMessageTextParams{ChatID: 7, MessageID: sent.ID, Text: "Approved ✔"}

	m, err := b.EditMessageText(ctx, edit)
	if err != nil {
		t.Fatalf("EditMessageText: %v", err)
	}
	if m.Text != "Approved ✔" || m.EditDate == 0 || m.ID != sent.ID || m.ReplyMarkup != nil {
		t.Errorf("edited = %+v, want new text, an edit date and no keyboard", m)
	}
	stored, _ := srv.Message(7, sent.ID)
	if stored.Text != "Approved ✔" || stored.Edits != 1 {
		t.Errorf("stored = %+v, want the edit recorded", stored)
	}

	_, err = b.EditMessageText(ctx, edit)
	want := fixtureReply(t, "error_400_message_not_modified.json").Description + ": specified new message content"
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), want) {
		t.Errorf("identical edit: %v, want %q", err, want)
	}
	edit.MessageID = 99
	_, err = b.EditMessageText(ctx, edit)
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), "message to edit not found") {
		t.Errorf("edit of a missing message: %v, want message to edit not found", err)
	}
}

func TestEditMessageReplyMarkup(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	sent, err := sendText(ctx, b, 7, "Approve op 42?")
	if err != nil {
		t.Fatal(err)
	}
	params := &bot.EditMessageReplyMarkupParams{ChatID: 7, MessageID: sent.ID, ReplyMarkup: approveKeyboard("42")}
	m, err := b.EditMessageReplyMarkup(ctx, params)
	if err != nil || m.ReplyMarkup == nil {
		t.Fatalf("add keyboard: %+v, %v", m, err)
	}
	if _, err := b.EditMessageReplyMarkup(ctx, params); !errors.Is(err, bot.ErrorBadRequest) ||
		!strings.Contains(err.Error(), "message is not modified") {
		t.Errorf("same keyboard again: %v, want message is not modified", err)
	}
	params.ReplyMarkup = nil
	if _, err := b.EditMessageReplyMarkup(ctx, params); err != nil {
		t.Errorf("remove keyboard: %v", err)
	}
	if stored, _ := srv.Message(7, sent.ID); stored.ReplyMarkup != nil || stored.Edits != 2 {
		t.Errorf("stored = %+v, want no keyboard after 2 edits", stored)
	}
}

func TestDeleteMessage(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	sent, err := sendText(ctx, b, 7, "bye")
	if err != nil {
		t.Fatal(err)
	}
	params := &bot.DeleteMessageParams{ChatID: 7, MessageID: sent.ID}
	if ok, err := b.DeleteMessage(ctx, params); !ok || err != nil {
		t.Fatalf("DeleteMessage = %v, %v; want true", ok, err)
	}
	if _, err := b.DeleteMessage(ctx, params); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("second delete: %v, want bad request", err)
	}
	if got := srv.Messages(7); len(got) != 1 || !got[0].Deleted {
		t.Errorf("messages = %+v, want one, deleted", got)
	}
}

func TestAnswerCallbackQuery(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, CallbackQueryTTL: 15 * time.Second})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	_, fresh := srv.PushCallbackQuery(7, 7, 1, "ap:42")
	_, stale := srv.PushCallbackQuery(7, 7, 1, "ap:42")

	if ok, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: fresh, Text: "approved"}); !ok || err != nil {
		t.Fatalf("answer = %v, %v; want true", ok, err)
	}
	clock.Advance(16 * time.Second)
	tooOld := "query is too old and response timeout expired or query ID is invalid"
	for _, id := range []string{stale, "no-such-query"} {
		_, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: id})
		if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), tooOld) {
			t.Errorf("answer %s: %v, want %q", id, err, tooOld)
		}
	}
	if got := srv.CallbackAnswers(); len(got) != 1 || got[0].QueryID != fresh || got[0].Text != "approved" {
		t.Errorf("answers = %+v, want the one accepted", got)
	}
}

func TestSetMyCommands(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	cmds := []models.BotCommand{{Command: "status", Description: "Show pending operations"}}
	if ok, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds}); !ok || err != nil {
		t.Fatalf("SetMyCommands = %v, %v", ok, err)
	}
	if got := srv.Commands(); len(got) != 1 || got[0].Command != "status" {
		t.Errorf("commands = %+v, want status", got)
	}
	_, err := b.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: []models.BotCommand{{Command: "Bad Name", Description: "x"}}})
	if !errors.Is(err, bot.ErrorBadRequest) || !strings.Contains(err.Error(), "BOT_COMMAND_INVALID") {
		t.Errorf("invalid command: %v, want BOT_COMMAND_INVALID", err)
	}
}

func TestWebhookBlocksPolling(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()

	if _, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "http://example.com/hook"}); !errors.Is(err, bot.ErrorBadRequest) {
		t.Errorf("plain http webhook: %v, want bad request", err)
	}
	ok, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "https://example.com/hook", SecretToken: "s3cret", AllowedUpdates: []string{"message"}})
	if !ok || err != nil {
		t.Fatalf("SetWebhook = %v, %v", ok, err)
	}
	if w := srv.Webhook(); w.URL != "https://example.com/hook" || w.SecretToken != "s3cret" || w.MaxConnections != 40 {
		t.Errorf("webhook = %+v, want max_connections 40 when not given", w)
	}
	for given, want := range map[int]int{7: 7, 500: 100} {
		if _, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: "https://example.com/hook", MaxConnections: given}); err != nil {
			t.Fatal(err)
		}
		if got := srv.Webhook().MaxConnections; got != want {
			t.Errorf("max_connections %d: recorded %d, want %d", given, got, want)
		}
	}
	if r := post(t, srv, "getUpdates", nil); r.Status != 409 || !strings.Contains(r.Description, "webhook is active") {
		t.Errorf("getUpdates with a webhook = %+v, want 409", r)
	}
	if ok, err := b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); !ok || err != nil {
		t.Fatalf("DeleteWebhook = %v, %v", ok, err)
	}
	if r := post(t, srv, "getUpdates", nil); !r.OK {
		t.Errorf("getUpdates after deleteWebhook = %+v, want ok", r)
	}
}
