package standin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/telegram/standin"
)

func TestGetMe(t *testing.T) {
	srv := newServer(t, standin.Options{
		Token: "5176662516:AAtest",
		Bot:   standin.User{FirstName: "Coffee, please", Username: "OneCoffeebot"},
	})
	b, _ := newBot(t, srv, 3*time.Second)

	me, err := b.GetMe(context.Background())
	if err != nil {
		t.Fatalf("GetMe: %v", err)
	}
	if got, want := me.ID, int64(5176662516); got != want {
		t.Errorf("ID = %d, want %d (from the token)", got, want)
	}
	if !me.IsBot || me.FirstName != "Coffee, please" || me.Username != "OneCoffeebot" {
		t.Errorf("GetMe = %+v, want the configured bot", me)
	}
	if got, want := len(srv.CallsTo("getMe")), 2; got != want {
		t.Errorf("getMe calls = %d, want %d (bot.New and GetMe)", got, want)
	}
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	srv := newServer(t, standin.Options{})

	_, err := bot.New("42:WRONG", bot.WithServerURL(srv.URL()))
	if !errors.Is(err, bot.ErrorUnauthorized) {
		t.Fatalf("bot.New with a wrong token: got %v, want ErrorUnauthorized", err)
	}
	got := postToken(t, srv, "42:WRONG", "sendMessage", url.Values{"chat_id": {"1"}, "text": {"x"}})
	want := fixtureReply(t, "error_401_unauthorized.json")
	if got.Status != 401 || got.OK || got.ErrorCode != 401 || got.Description != want.Description {
		t.Errorf("reply = %+v, want 401 %q", got, want.Description)
	}
	if n := len(srv.Messages(1)); n != 0 {
		t.Errorf("messages = %d, want 0", n)
	}
}

func TestUnknownMethodIsNotFound(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)

	_, err := b.SendDice(context.Background(), &bot.SendDiceParams{ChatID: 1})
	if !errors.Is(err, bot.ErrorNotFound) {
		t.Errorf("sendDice: got %v, want ErrorNotFound", err)
	}
	got := post(t, srv, "sendVideoNote", url.Values{"chat_id": {"1"}})
	if got.Status != 404 || got.ErrorCode != 404 || got.Description != "Not Found" {
		t.Errorf("reply = %+v, want 404 Not Found", got)
	}
}

func TestRequestEncodings(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		query       string
	}{
		{"urlencoded", "application/x-www-form-urlencoded", "chat_id=777&text=hello+there", ""},
		{"json", "application/json", `{"chat_id":777,"text":"hello there"}`, ""},
		{"query string", "", "", "?chat_id=777&text=hello%20there"},
		{"multipart", "multipart/form-data; boundary=XX",
			"--XX\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n777\r\n" +
				"--XX\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nhello there\r\n--XX--\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, standin.Options{})
			req, err := http.NewRequest(http.MethodPost, srv.URL()+"/bot"+srv.Token()+"/sendMessage"+tt.query, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tt.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if r := decodeReply(t, resp); !r.OK {
				t.Fatalf("reply = %+v, want ok", r)
			}
			msgs := srv.Messages(777)
			if len(msgs) != 1 || msgs[0].Text != "hello there" {
				t.Fatalf("messages = %+v, want one %q", msgs, "hello there")
			}
			if got, want := srv.Calls()[0].Params["chat_id"], "777"; got != want {
				t.Errorf("recorded chat_id = %q, want %q", got, want)
			}
		})
	}
}

func TestMultipartFromClientRecordsRawFields(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{
		ChatID: 777, Text: "Approve op 42?", ReplyMarkup: approveKeyboard("42"),
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	call := srv.CallsTo("sendMessage")[0]
	if got, want := call.Params["chat_id"], "777"; got != want {
		t.Errorf("chat_id = %q, want %q", got, want)
	}
	if got := call.Params["reply_markup"]; !strings.HasPrefix(got, `{"inline_keyboard":[[{"text":"Approve","callback_data":"ap:42"`) {
		t.Errorf("reply_markup = %s, want the JSON keyboard", got)
	}
	if call.ChatID != 777 || call.Status != 200 || !call.Done {
		t.Errorf("call = %+v, want chat 777, status 200, done", call)
	}
}

func TestMethodNamesIgnoreCase(t *testing.T) {
	srv := newServer(t, standin.Options{})
	if r := post(t, srv, "SENDMESSAGE", url.Values{"chat_id": {"5"}, "text": {"hi"}}); !r.OK {
		t.Fatalf("reply = %+v, want ok", r)
	}
	if got := len(srv.Messages(5)); got != 1 {
		t.Errorf("messages = %d, want 1", got)
	}
}

func TestTokenNeverLogged(t *testing.T) {
	var logs logBuffer
	const token = "777000:SECRET-token_value"
	srv := newServer(t, standin.Options{Token: token, Logf: logs.Logf})
	srv.Inject(standin.AcceptThenDrop().For("sendMessage").InChat(2))
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()

	_, _ = sendText(ctx, b, 1, "one")
	_, _ = sendText(ctx, b, 2, "two")
	postToken(t, srv, "777000:OTHER-secret", "getMe", nil)

	if logs.String() == "" {
		t.Fatal("nothing logged; the check below would prove nothing")
	}
	for _, secret := range []string{token, "SECRET-token_value", "OTHER-secret"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log contains %q:\n%s", secret, logs.String())
		}
		if dump := fmt.Sprintf("%+v", srv.Calls()); strings.Contains(dump, secret) {
			t.Errorf("calls contain %q: %s", secret, dump)
		}
	}
}

func TestWaitForWakesOnChange(t *testing.T) {
	srv := newServer(t, standin.Options{})
	result := make(chan error, 1)
	go func() {
		result <- srv.WaitTimeout(waitLimit, func(s *standin.Server) bool { return len(s.Messages(9)) == 2 })
	}()
	post(t, srv, "sendMessage", url.Values{"chat_id": {"9"}, "text": {"a"}})
	post(t, srv, "sendMessage", url.Values{"chat_id": {"9"}, "text": {"b"}})
	if err := receive(t, result); err != nil {
		t.Fatalf("WaitFor: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := srv.WaitFor(ctx, func(*standin.Server) bool { return false })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor with a done context = %v, want context.Canceled", err)
	}
}

func TestCloseIsIdempotentAndEndsWaits(t *testing.T) {
	srv := standin.New(standin.Options{})
	result := make(chan error, 1)
	go func() {
		result <- srv.WaitFor(context.Background(), func(*standin.Server) bool { return false })
	}()
	srv.Close()
	srv.Close()
	if err := receive(t, result); !errors.Is(err, standin.ErrClosed) {
		t.Errorf("WaitFor after Close = %v, want ErrClosed", err)
	}
}

func TestHTMLBodyFixtureIsServedVerbatim(t *testing.T) {
	srv := newServer(t, standin.Options{})
	srv.Inject(standin.BadGatewayHTML())
	resp, err := http.PostForm(srv.URL()+"/bot"+srv.Token()+"/getMe", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	_, wantBody, _ := bytes.Cut(fixture(t, "http_502_nginx_html.txt"), []byte("\r\n\r\n"))
	if resp.StatusCode != 502 || !bytes.Equal(body.Bytes(), wantBody) {
		t.Errorf("got %d %q, want 502 with the nginx page", resp.StatusCode, body.String())
	}
}

func TestChatActionTakesTelegramsActionNames(t *testing.T) {
	srv := newServer(t, standin.Options{})
	if got := post(t, srv, "sendChatAction", url.Values{"chat_id": {"1"}, "action": {"typing"}}); got.Status != 200 || !got.OK {
		t.Errorf("typing: reply = %+v, want ok", got)
	}
	if got := post(t, srv, "sendChatAction", url.Values{"chat_id": {"1"}, "action": {"dancing"}}); got.Status != 400 {
		t.Errorf("an unknown action: reply = %+v, want 400", got)
	}
}
