package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/demo"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/telegram/standin"
	"github.com/countersign/countersign/vault"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 10 * time.Second

const (
	you    = 111
	target = 222
)

// newScene is a scene whose bot is the test itself: it speaks the Bot API to
// the fake server, as the real bot would.
func newScene(t *testing.T) *demo.Scene {
	t.Helper()
	v, err := vault.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &demo.Scene{Server: newStandin(t), You: you, Target: target, TargetName: "Alex", Vault: v}
}

// call makes one Bot API call as the bot and returns its result; a dropped
// connection is returned as the error.
func call(t *testing.T, s *demo.Scene, method string, form url.Values) (json.RawMessage, error) {
	t.Helper()
	resp, err := http.PostForm(s.Server.URL()+"/bot"+s.Server.Token()+"/"+method, form)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		Description string          `json:"description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || !r.OK {
		t.Fatalf("%s: %v %s", method, err, r.Description)
	}
	return r.Result, nil
}

// send sends a message as the bot, with a reply markup when markup is not
// empty, and returns its id.
func send(t *testing.T, s *demo.Scene, chat int64, text, markup string) int {
	t.Helper()
	res, err := call(t, s, "sendMessage", url.Values{"chat_id": {strconv.FormatInt(chat, 10)}, "text": {text}, "reply_markup": {markup}})
	if err != nil {
		t.Fatalf("sendMessage: %v", err)
	}
	var m struct {
		MessageID int `json:"message_id"`
	}
	json.Unmarshal(res, &m)
	return m.MessageID
}

// edit replaces the text of the bot's message id in chat, and its keyboard
// with markup (none when empty).
func edit(t *testing.T, s *demo.Scene, chat int64, id int, text, markup string) {
	t.Helper()
	if _, err := call(t, s, "editMessageText", url.Values{"chat_id": {strconv.FormatInt(chat, 10)},
		"message_id": {strconv.Itoa(id)}, "text": {text}, "reply_markup": {markup}}); err != nil {
		t.Fatalf("editMessageText: %v", err)
	}
}

// update is the part of an update these tests check.
type update struct {
	Message *struct {
		Text    string `json:"text"`
		ReplyTo *struct {
			MessageID int `json:"message_id"`
		} `json:"reply_to_message"`
	} `json:"message"`
	CallbackQuery *struct {
		From struct {
			ID int64 `json:"id"`
		} `json:"from"`
		Data    string `json:"data"`
		Message struct {
			MessageID int `json:"message_id"`
		} `json:"message"`
	} `json:"callback_query"`
}

// nextUpdate waits for the next update the person's typing or tapping made,
// and takes it off the queue as the bot's getUpdates would.
func nextUpdate(t *testing.T, s *demo.Scene) update {
	t.Helper()
	if err := s.Server.WaitTimeout(waitLimit, func(srv *standin.Server) bool { return len(srv.PendingUpdates()) > 0 }); err != nil {
		t.Fatalf("no update: %v", err)
	}
	id := s.Server.PendingUpdates()[0]
	res, err := call(t, s, "getUpdates", url.Values{"offset": {strconv.FormatInt(id, 10)}, "limit": {"1"}, "timeout": {"0"}})
	if err != nil {
		t.Fatal(err)
	}
	var us []update
	if err := json.Unmarshal(res, &us); err != nil || len(us) != 1 {
		t.Fatalf("getUpdates = %s (%v), want one update", res, err)
	}
	call(t, s, "getUpdates", url.Values{"offset": {strconv.FormatInt(id+1, 10)}, "timeout": {"0"}}) // confirms it
	return us[0]
}

// typist is a person at a Terminal: what they type goes in, what it draws is
// screen.
type typist struct {
	t      *testing.T
	keys   *io.PipeWriter
	screen *syncbuf.Buffer
	done   chan error
}

func startTerminal(t *testing.T, s *demo.Scene) *typist {
	t.Helper()
	in, keys := io.Pipe()
	ty := &typist{t: t, keys: keys, screen: &syncbuf.Buffer{}, done: make(chan error, 1)}
	go func() { ty.done <- s.Terminal(context.Background(), in, ty.screen) }()
	t.Cleanup(func() { ty.end() })
	ty.see("Ctrl-D ends the demo.")
	return ty
}

// typeLine types a line; it returns where the screen was then, for see after.
func (ty *typist) typeLine(line string) int {
	ty.t.Helper()
	at := len(ty.screen.String())
	if _, err := io.WriteString(ty.keys, line+"\n"); err != nil {
		ty.t.Fatalf("typing %q: %v", line, err)
	}
	return at
}

// see waits until the screen shows want.
func (ty *typist) see(want string) { ty.seeAfter(0, want) }

// seeAfter waits until the screen shows want past offset at.
func (ty *typist) seeAfter(at int, want string) {
	ty.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := ty.screen.WaitFor(ctx, func(s string) bool { return strings.Contains(s[min(at, len(s)):], want) }); err != nil {
		ty.t.Fatalf("the screen never showed %q:\n%s", want, ty.screen.String())
	}
}

// end closes the input, as Ctrl-D does, and waits for the Terminal to return.
func (ty *typist) end() error {
	ty.keys.Close()
	select {
	case err := <-ty.done:
		ty.done <- err // for a second end
		return err
	case <-time.After(waitLimit):
		ty.t.Fatal("Terminal did not return after its input ended")
		return nil
	}
}

// unknownEnvelope writes the envelope the operator writes for an unknown
// outcome of op.
func unknownEnvelope(t *testing.T, s *demo.Scene, op string) {
	t.Helper()
	now := time.Now()
	_, err := s.Vault.Write(envelope.Envelope{OperationID: op, Action: envelope.ActionSendMessage, Tool: "commit_send_message",
		Status: envelope.StatusUnknown, LastConfirmed: "approved", NextAction: envelope.NextVerify, Target: "222",
		PayloadSHA256: strings.Repeat("ab", 32), Created: now, Expires: now.Add(time.Hour), Attempts: 1,
		Response: "no answer after the request was sent", Excerpt: "lost"})
	if err != nil {
		t.Fatal(err)
	}
}

func keyboard(buttons ...string) string {
	var row []map[string]string
	for i := 0; i+1 < len(buttons); i += 2 {
		row = append(row, map[string]string{"text": buttons[i], "callback_data": buttons[i+1]})
	}
	b, _ := json.Marshal(map[string]any{"inline_keyboard": [][]map[string]string{row}})
	return string(b)
}

// newStandin starts a stand-in Bot API that is closed when the test ends.
func newStandin(t *testing.T) *standin.Server {
	s := standin.New(standin.Options{})
	t.Cleanup(s.Close)
	return s
}
