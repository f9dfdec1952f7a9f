package tools

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/action"
)

// Chats reads a chat as its members know it and what this bot may do there
// (Telegram's getChat and getChatMember). A read changes nothing; its errors
// are a Sender's (a *RefusedError for a chat the bot cannot reach, ErrNotSent
// for a read that did not get through), so that the operator classifies them
// as it does a send's.
type Chats interface {
	// Audience is chat's name and type as they are now.
	Audience(ctx context.Context, chat string) (action.Audience, error)
	// Right is whether this bot may post in chat, a chat of type kind
	// (Audience.Type), now.
	Right(ctx context.Context, chat, kind string) (Right, error)
}

// Right is whether this bot may post in a chat.
type Right struct {
	// May: the bot may post there.
	May bool
	// Status is the bot's standing in the chat, for a person: "a member",
	// "an administrator without the right to post messages", "restricted from
	// sending messages", "removed from the chat".
	Status string
}

// audienceOf is the chat p reaches, as the card of a payload of t names it;
// "" for none (an HTTP call).
func audienceOf(t Tool, p action.Payload) string {
	if p.Request != nil || p.Action == action.HTTP {
		return ""
	}
	return ShowOf(t, p).Audience
}

// Bind is p, a payload of t, with the chat it reaches as its members know it
// now (Payload.Audience), so that the approval binds the card's audience by
// the payload's hash. A chat that cannot be read is left unnamed: the card
// then says the bot cannot see it, and the send finds out. With no chats (a
// transport that has none, the console) p is returned as it is.
func Bind(ctx context.Context, chats Chats, t Tool, p action.Payload) action.Payload {
	chat := audienceOf(t, p)
	if chats == nil || chat == "" {
		return p
	}
	if a, err := chats.Audience(ctx, chat); err == nil {
		p.Audience = &a
	}
	return p
}

// StillAudience reads again the chat p, a payload of t, reaches, and says what
// changed since p named it (Payload.Audience): no Words when it reads the
// same, or p names no audience. The chat as it reads now comes back in
// Change.Audience, for the payload asked again. Its errors are the read's.
func StillAudience(ctx context.Context, chats Chats, t Tool, p action.Payload) (Change, error) {
	chat := audienceOf(t, p)
	if chats == nil || chat == "" || p.Audience == nil {
		return Change{}, nil
	}
	now, err := chats.Audience(ctx, chat)
	if err != nil {
		return Change{}, fmt.Errorf("tools: read chat %s again: %w", chat, err)
	}
	was := *p.Audience
	switch {
	case now.Type != was.Type:
		return Change{Words: fmt.Sprintf("chat %s is of another kind since it was approved: it was %s, it is now %s", chat, was, now), Audience: &now}, nil
	case now != was:
		return Change{Words: fmt.Sprintf("chat %s was renamed since it was approved: it was %s, it is now %s", chat, was, now), Audience: &now}, nil
	}
	return Change{}, nil
}

// posts are the actions that put a new message in the chat they reach.
var posts = map[string]bool{action.SendMessage: true, action.PublishPost: true, action.SendPhoto: true, action.SendDocument: true,
	action.SendAlbum: true, action.SendPoll: true, action.CopyMessage: true, action.ForwardMessage: true}

// StillMayPost reads again whether this bot may post in the group or channel
// p, a payload of t that posts, reaches: lost is what changed in words, ""
// when it may, or p posts nowhere it needs a right to (a private chat, an
// edit, a payload with no audience). Its errors are the read's.
func StillMayPost(ctx context.Context, chats Chats, t Tool, p action.Payload) (lost string, err error) {
	chat := audienceOf(t, p)
	if chats == nil || chat == "" || p.Audience == nil || p.Audience.Type == "private" || !posts[p.Action] {
		return "", nil
	}
	r, err := chats.Right(ctx, chat, p.Audience.Type)
	if err != nil {
		return "", fmt.Errorf("tools: read the bot's right to post in chat %s: %w", chat, err)
	}
	if r.May {
		return "", nil
	}
	return fmt.Sprintf("the bot may no longer post in chat %s (%s): it is %s", chat, p.Audience, r.Status), nil
}
