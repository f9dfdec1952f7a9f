package standin_test

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/telegram/standin"
)

// getChatMember answers for the bot in Telegram's shape (a captured
// administrator of a channel), with the standing SetBotMember gave it, and a
// chat takes the bot's posts only as that standing allows, with Telegram's
// refusals.
func TestBotMemberStanding(t *testing.T) {
	const channel, group = -1002025237232, -4001
	srv := newServer(t, standin.Options{Chats: []standin.Chat{{ID: channel, Type: "channel", Title: "News"}, {ID: group, Type: "group", Title: "Team"}}})
	bot := strconv.FormatInt(srv.Bot().ID, 10)
	member := func(chat int64) apiReply {
		return post(t, srv, "getChatMember", url.Values{"chat_id": {strconv.FormatInt(chat, 10)}, "user_id": {bot}})
	}
	got, want := member(channel).Result, fixtureReply(t, "getChatMember_administrator_channel.json").Result
	if g, w := keysOf(t, got), keysOf(t, want); !slices.Equal(g, w) {
		t.Errorf("getChatMember keys = %v, want %v", g, w)
	}
	if g, w := keysOf(t, field(t, got, "user")), keysOf(t, field(t, want, "user")); !slices.Equal(g, w) {
		t.Errorf("getChatMember's user keys = %v, want %v", g, w)
	}
	postTo := func(chat int64) apiReply {
		return post(t, srv, "sendMessage", url.Values{"chat_id": {strconv.FormatInt(chat, 10)}, "text": {"hello"}})
	}
	for _, c := range []struct {
		name    string
		chat    int64
		m       *standin.BotMember
		status  string
		refusal string
	}{
		{"a channel's administrator that posts", channel, nil, `"status":"administrator"`, ""},
		{"a group's member", group, nil, `"status":"member"`, ""},
		{"a channel's administrator that may not post", channel, &standin.BotMember{Status: "administrator"}, `"can_post_messages":false`, "Bad Request: need administrator rights in the channel chat"},
		{"restricted", group, &standin.BotMember{Status: "restricted"}, `"can_send_messages":false`, "Bad Request: not enough rights to send text messages to the chat"},
		{"restricted, may send", group, &standin.BotMember{Status: "restricted", CanSendMessages: true}, `"can_send_messages":true`, ""},
		{"left", group, &standin.BotMember{Status: "left"}, `"status":"left"`, "Forbidden: bot is not a member of the group chat"},
		{"kicked", group, &standin.BotMember{Status: "kicked"}, `"status":"kicked"`, "Forbidden: bot was kicked from the group chat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.m != nil {
				srv.SetBotMember(c.chat, *c.m)
			}
			if got := member(c.chat); !got.OK || !strings.Contains(string(got.Result), c.status) {
				t.Errorf("getChatMember = %+v, want %s", got, c.status)
			}
			got := postTo(c.chat)
			if c.refusal == "" && !got.OK || c.refusal != "" && got.Description != c.refusal {
				t.Errorf("sendMessage = %+v, want refused with %q", got, c.refusal)
			}
		})
	}
}
