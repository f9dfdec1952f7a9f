package standin_test

import (
	"net/url"
	"testing"

	"github.com/countersign/countersign/telegram/standin"
)

func TestConversationInterleavesBothSides(t *testing.T) {
	srv := standin.New(standin.Options{}) // the constructor a program uses, without a test
	defer srv.Close()
	srv.PushMessage(111, 111, "/send 222 hello")
	if r := post(t, srv, "sendMessage", url.Values{"chat_id": {"111"}, "text": {"Approve?"}}); !r.OK {
		t.Fatalf("sendMessage: %+v", r)
	}
	srv.PushMessage(111, 111, "thanks")
	if r := post(t, srv, "sendMessage", url.Values{"chat_id": {"222"}, "text": {"hello"}}); !r.OK {
		t.Fatalf("sendMessage: %+v", r)
	}
	if r := post(t, srv, "deleteMessage", url.Values{"chat_id": {"111"}, "message_id": {"2"}}); !r.OK {
		t.Fatalf("deleteMessage: %+v", r)
	}

	tests := []struct {
		name     string
		chat     int64
		texts    []string
		incoming []bool
		deleted  []bool
	}{
		{"both sides in order", 111, []string{"/send 222 hello", "Approve?", "thanks"}, []bool{true, false, true}, []bool{false, true, false}},
		{"the bot's side only", 222, []string{"hello"}, []bool{false}, []bool{false}},
		{"a chat nobody wrote in", 333, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := srv.Conversation(tt.chat)
			if len(got) != len(tt.texts) {
				t.Fatalf("Conversation(%d) has %d messages, want %d: %+v", tt.chat, len(got), len(tt.texts), got)
			}
			for i, m := range got {
				if m.Text != tt.texts[i] || m.Incoming != tt.incoming[i] || m.Deleted != tt.deleted[i] {
					t.Errorf("message %d = %q incoming=%v deleted=%v, want %q incoming=%v deleted=%v",
						i, m.Text, m.Incoming, m.Deleted, tt.texts[i], tt.incoming[i], tt.deleted[i])
				}
				if i > 0 && m.MessageID <= got[i-1].MessageID {
					t.Errorf("message ids %d then %d, want increasing", got[i-1].MessageID, m.MessageID)
				}
			}
		})
	}
}

func TestAsksReplyRecordsAForceReply(t *testing.T) {
	srv := newServer(t, standin.Options{})
	tests := []struct {
		name   string
		markup string
		want   bool
	}{
		{"force reply", `{"force_reply":true,"input_field_placeholder":"The new text"}`, true},
		{"force reply off", `{"force_reply":false}`, false},
		{"inline keyboard", `{"inline_keyboard":[[{"text":"OK","callback_data":"ok"}]]}`, false},
		{"no markup", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, srv, "sendMessage", url.Values{"chat_id": {"111"}, "text": {tt.name}, "reply_markup": {tt.markup}})
			if !r.OK {
				t.Fatalf("sendMessage: %+v", r)
			}
			msgs := srv.Messages(111)
			if got := msgs[len(msgs)-1]; got.AsksReply != tt.want || got.Text != tt.name {
				t.Errorf("message %q AsksReply = %v, want %v", got.Text, got.AsksReply, tt.want)
			}
		})
	}
}
