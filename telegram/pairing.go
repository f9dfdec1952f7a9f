package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
)

// Pairing opens a bot whose policy names no operator to its first: a person
// who writes to it in a private chat is given a one-time code, and whoever runs
// the bot's machine confirms it there. *pairing.Desk is one.
type Pairing interface {
	// Offer gives user (name is how Telegram shows them) a code, or the one
	// they hold; pairing.ErrBusy while too many others hold one,
	// pairing.ErrPaired once someone paired.
	Offer(user policy.UserID, name string) (pairing.Offer, error)
	// Wait returns who paired, once a code is confirmed, or ctx's error.
	Wait(ctx context.Context) (pairing.Paired, error)
}

var _ Pairing = (*pairing.Desk)(nil)

// ErrPaired is returned by Serve, once it told the person, when a code of
// Deps.Pairing was confirmed: the access lists the bot serves under no longer
// name everyone who may use it, so its caller serves again under lists that
// name the person paired.
var ErrPaired = errors.New("telegram: a person paired with the bot: serve again with access lists that name them")

// awaitPairing waits until a code of p is confirmed, and returns the person
// paired; ok is false when ctx ended first (or the confirmation could not be
// read).
func (t *Bot) awaitPairing(ctx context.Context, p Pairing) (who policy.UserID, ok bool) {
	paired, err := p.Wait(ctx)
	if err != nil {
		if ctx.Err() == nil {
			t.log.Error("pairing: a confirmation could not be read; restart the bot once it is fixed", "err", err)
		}
		return 0, false
	}
	return paired.User, true
}

// welcome tells the person paired, in their private chat (whose id is
// theirs), that they are the operator now. It is said once the round that
// served them as a stranger has stopped: whatever they send after reading it
// is served by the next round, which names them, never refused by this one.
func (t *Bot) welcome(ctx context.Context, user policy.UserID) {
	t.reply(ctx, privateChat(user), fmt.Sprintf("Paired: you are this bot's operator and approver now (user id %d). "+
		"/help lists the commands; /send <chat_id> <text> asks you to approve a message before it goes.", user))
}

// isWhoAmI reports whether line asks who its sender is (/whoami, /start).
func isWhoAmI(line string) bool {
	c, err := command.Parse(line)
	return err == nil && (c.Name == "whoami" || c.Name == "start")
}

// whoami answers /whoami and /start: anyone learns their user id and roles.
// A person with a role is answered at once; while pairing is open, anyone who
// is not an operator is offered a code; a stranger otherwise hears how to be
// let in, as seldom as any refusal.
func (t *Bot) whoami(ctx context.Context, m *models.Message) {
	user := author(m)
	text := command.WhoAmI(t.policy.Access, user)
	switch {
	case t.pairing != nil && !t.policy.Access.IsOperator(user):
		t.offerPairing(ctx, m)
	case len(command.Roles(t.policy.Access, user)) > 0:
		t.reply(ctx, m.Chat.ID, text)
	default:
		t.tellStranger(ctx, m.Chat.ID, user, text+" "+joinHow(user))
	}
}

// offerPairing gives the sender of m a code to become the bot's operator, or
// says why not now. The code is sent at once, whatever the stranger silence,
// each time its holder asks; the bot being busy is answered as seldom as a
// refusal.
func (t *Bot) offerPairing(ctx context.Context, m *models.Message) {
	user := author(m)
	o, err := t.pairing.Offer(user, displayName(m.From))
	switch {
	case errors.Is(err, pairing.ErrBusy):
		t.tellStranger(ctx, m.Chat.ID, user, fmt.Sprintf("Your user id is %d. This bot has no operator yet, and others are pairing with it now: try /start again in a few minutes.", user))
		return
	case errors.Is(err, pairing.ErrPaired):
		t.refuse(ctx, m.Chat.ID, user) // paired an instant ago: the bot serves its operator next
		return
	case err != nil:
		t.log.Error("pairing: no code given", "user", user, "err", err)
		t.reply(ctx, m.Chat.ID, failure(err))
		return
	}
	text := fmt.Sprintf("%s This bot has no operator yet. To become its operator and approver, run this on the machine where the bot runs, before %s:\n\n"+
		"countersign pair %s\n\n(with the bot's -data folder, as its log shows). The code works once.",
		command.WhoAmI(t.policy.Access, user), o.Expires.UTC().Format("15:04 UTC"), o.Code)
	if !o.Fresh {
		text = "You asked before: your code is still the one below, until " + o.Expires.UTC().Format("15:04 UTC") + ".\n\n" + text
	}
	// Every ask is answered: a person holding a code is one of at most
	// pairing.MaxPending, not one of the strangers whose answers are rationed,
	// and the chat's own pacing bounds how often.
	t.reply(ctx, m.Chat.ID, text)
}

// displayName is how Telegram shows a person: @username, else their name.
func displayName(u *models.User) string {
	if u.Username != "" {
		return "@" + u.Username
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}
