package telegram

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/secret"
)

// fuzzToken is a bot token in the shape @BotFather issues.
const fuzzToken = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// FuzzUpdate feeds the inbox arbitrary update bodies. Nothing panics; the key of an
// update names what it carries, as its handlers will read it, and not its number,
// so that a redelivery is known as one; and what the inbox keeps holds no token and
// no secret in any JSON string however it is escaped, stays an update if it was
// one, and still shows a handler that a secret was withheld.
func FuzzUpdate(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("standin", "testdata", "update_*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no recorded updates: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(int64(len(p)), data)
	}
	for _, body := range []string{
		`{"update_id":7,"message":{"message_id":1,"from":{"id":100},"chat":{"id":100,"type":"private"},"text":"/send 222 ` + fuzzToken + `"}}`,
		`{"update_id":8,"message":{"message_id":2,"from":{"id":100},"chat":{"id":100,"type":"private"},"text":"key\nsk-proj-` + strings.Repeat("a", 48) + ` caf\u00e9"}}`,
		`{"update_id":9,"callback_query":{"id":"4000000000000000001","from":{"id":100},"data":"ap1:ap-1:y","message":{"message_id":3,"chat":{"id":100,"type":"private"},"date":0}}}`,
		`{"update_id":10,"message":{"message_id":0,"chat":{"id":100}}}`,
		`{"update_id":11,"message":null,"callback_query":{"id":""}}`,
		`{"update_id":12,"edited_message":{"message_id":5,"chat":{"id":100,"type":"private"}}}`,
		`[1,2]`, `null`, `{"update_id":`,
	} {
		f.Add(int64(len(body)), []byte(body))
	}
	f.Fuzz(func(t *testing.T, id int64, body []byte) {
		checkKey(t, id, body)
		stored := inboxBody(body, fuzzToken)
		if bytes.Contains(stored, []byte(fuzzToken)) {
			t.Fatalf("the inbox keeps the token:\n%s", stored)
		}
		if key := updateKey(id, stored); secret.Contains(key) || strings.Contains(key, fuzzToken) {
			t.Fatalf("the inbox key %q holds a secret", key)
		}
		if again := inboxBody(stored, fuzzToken); !bytes.Equal(again, stored) {
			t.Fatalf("withholding twice changes the body:\n%s\n%s", stored, again)
		}
		if !json.Valid(body) {
			return
		}
		if !json.Valid(stored) {
			t.Fatalf("withholding broke the update:\n%s\nstored:\n%s", body, stored)
		}
		if s, ok := secretIn(stored); ok {
			t.Fatalf("the inbox keeps %q in a JSON string:\n%s", s, stored)
		}
		before, err1 := decodeUpdate(body)
		after, err2 := decodeUpdate(stored)
		if err1 == nil && err2 == nil && before.Message != nil && after.Message != nil &&
			(secret.Contains(before.Message.Text) || strings.Contains(before.Message.Text, fuzzToken)) &&
			!strings.Contains(after.Message.Text, secret.Withheld) {
			t.Fatalf("text %q with a secret is stored as %q, which does not say one was withheld", before.Message.Text, after.Message.Text)
		}
	})
}

// checkKey asserts that updateKey is the key of what the decoded update carries:
// its message, its callback query, and only otherwise its number.
func checkKey(t *testing.T, id int64, body []byte) {
	t.Helper()
	key := updateKey(id, body)
	if again := updateKey(id, body); again != key {
		t.Fatalf("updateKey is not stable: %q then %q", key, again)
	}
	byNumber := fmt.Sprintf("update:%d", id)
	if key != byNumber && updateKey(id^1, body) != key {
		t.Fatalf("key %q changes with the update's number", key)
	}
	u, err := decodeUpdate(body)
	if err != nil {
		return
	}
	want := byNumber
	switch {
	case u.Message != nil && u.Message.ID != 0 && u.Message.Chat.ID != 0:
		want = fmt.Sprintf("message:%d:%d", u.Message.Chat.ID, u.Message.ID)
	case u.CallbackQuery != nil && u.CallbackQuery.ID != "":
		want = "callback_query:" + u.CallbackQuery.ID
	}
	if key != want {
		t.Fatalf("updateKey = %q, but the update as handled carries %q:\n%s", key, want, body)
	}
}

// secretIn returns a JSON string (a key or a value) in body that holds the token or a
// secret, once decoded.
func secretIn(body []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "", false
	}
	var found string
	var walk func(v any) bool
	bad := func(s string) bool {
		if strings.Contains(s, fuzzToken) || secret.Contains(s) {
			found = s
			return true
		}
		return false
	}
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return bad(v)
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for k, e := range v {
				if bad(k) || walk(e) {
					return true
				}
			}
		}
		return false
	}
	return found, walk(v)
}
