// Package command is the operator's chat language: it parses the commands people
// type (/send, /publish, /photo, /document, /edit, /delete, /pin, /unpin, /draft, /ops, /pending, /resolve, /retry, /cancel, /stop, /new, /help)
// and carries them out on the operator, the same way in a terminal and in Telegram.
package command

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// Command is one parsed command line.
type Command struct {
	Name   string // without the slash: "send", "publish", ...
	Target string // send, publish: the chat id or @username
	Text   string // send, publish, draft, edit: exactly as typed after the target; code: the code
	OpID   string // resolve, retry, cancel, edit, delete, pin, unpin; amend, code: the approval or its operation
	// Delivered is the answer of a resolve.
	Delivered bool
	// Grant: a window grant's tool, chat (Target) and length; or, for a task's
	// grant, the task (OpID) and the code its list showed (Text). Revoke: the
	// grant (OpID).
	Tool string
	For  time.Duration
}

// Usage is the one-line synopsis of every command, in the order /help lists them.
var Usage = []struct{ Name, Args, Doc string }{
	{"send", "<chat_id> <text>", "send a message, after approval"},
	{"publish", "<chat_id> <text>", "publish a channel post, after approval"},
	{"photo", "<chat_id> <path|url> [caption]", "send a photo (or attach one, with this as its caption, and leave out the path), after approval"},
	{"document", "<chat_id> <path|url> [caption]", "send a file as a document (or attach one, with this as its caption), after approval"},
	{"edit", "<op_id> <text>", "change the text of a message this bot sent, after approval"},
	{"delete", "<op_id>", "delete for everyone a message this bot sent in the last 48 hours, after approval"},
	{"pin", "<op_id>", "pin, silently, a message this bot sent, after approval"},
	{"unpin", "<op_id>", "unpin a message this bot sent, after approval"},
	{"draft", "<text>", "draft a reply; nothing is sent"},
	{"ops", "", "recent operations"},
	{"pending", "", "what waits for approval or verification"},
	{"resolve", "<op_id> delivered|not_delivered", "record what you verified about an unknown outcome"},
	{"retry", "<op_id>", "send again an operation verified not delivered"},
	{"cancel", "<op_id>", "cancel an operation that has not been sent"},
	{"amend", "<approval_id|op_id> <text>", "approvers: correct the text (or caption) of a request before approving it; a new card follows"},
	{"grant", "<tool> <chat_id> <duration> | <task_id> [code]", "approvers: approve that tool to that chat without a card for a time; or every approval a task waits on, listed first"},
	{"grants", "", "approvers: the grants in force"},
	{"revoke", "<grant_id>", "approvers: end a grant now"},
	{"code", "<approval_id|op_id> <code>", "approvers: approve a request that asks a second factor (step_up), with the code from your authenticator app"},
	{"review", "<op_id>", "approvers: a link to the whole payload of a request in any browser, for you alone, until it is decided"},
	{"stop", "", "stop the model's running request in this chat"},
	{"new", "", "start a new conversation: the next message does not continue the last"},
	{"whoami", "", "your user id and what you may do here"},
	{"help", "", "this list"},
}

// ErrUsage is wrapped by every parse error; the message says the right form.
var ErrUsage = errors.New("usage")

// DecideByTap answers a /approve or /reject typed where a tap decides.
const DecideByTap = "an approval is decided with the Approve or Reject button on its card; /pending lists what waits, with its buttons"

// NoModel answers plain text where no model is configured: what would take it,
// and that commands work without one.
const NoModel = "plain text goes to a model, and this bot has none: set ANTHROPIC_API_KEY, or OPENAI_API_KEY, or OPENAI_BASE_URL with OPENAI_MODEL for a local server, " +
	"or COUNTERSIGN_AGENT=claude-code|codex where the bot runs, and start it again; commands work without a model: /help lists them"

// Parse reads one command line. The text of /send, /publish and /draft is kept
// exactly as typed after the separating space: nothing is trimmed or added. A
// "/cmd@botname" form, as Telegram clients send in groups, is accepted.
func Parse(line string) (Command, error) {
	line = strings.TrimLeft(line, " \t")
	if !strings.HasPrefix(line, "/") {
		return Command{}, fmt.Errorf("%w: commands start with /; try /help", ErrUsage)
	}
	name, rest := cut(line[1:])
	name, _, _ = strings.Cut(name, "@")
	c := Command{Name: strings.ToLower(name)}
	switch c.Name {
	case "send", "publish":
		c.Target, c.Text = cut(rest)
		if c.Target == "" || strings.TrimSpace(c.Text) == "" {
			return c, usageErr(c.Name)
		}
		return c, checkTarget(c)
	case "photo", "document":
		// What follows the chat is the file and its caption, or, with a file
		// attached to the message, the caption alone: the handler knows which.
		c.Target, c.Text = cut(rest)
		if c.Target == "" {
			return c, usageErr(c.Name)
		}
		return c, checkTarget(c)
	case "edit":
		c.OpID, c.Text = cut(rest)
		if c.OpID == "" || strings.TrimSpace(c.Text) == "" {
			return c, usageErr(c.Name)
		}
		return c, checkOpID(c)
	case "draft":
		c.Text = rest
		if strings.TrimSpace(c.Text) == "" {
			return c, usageErr(c.Name)
		}
	case "start":
		// What a Telegram client sends first, with a deep link's parameter after
		// it when there is one: answered as /whoami, the parameter unread.
	case "ops", "pending", "help", "stop", "new", "whoami":
		if strings.TrimSpace(rest) != "" {
			return c, usageErr(c.Name)
		}
	case "retry", "cancel", "delete", "pin", "unpin":
		c.OpID = strings.TrimSpace(rest)
		if c.OpID == "" || strings.ContainsFunc(c.OpID, unicode.IsSpace) {
			return c, usageErr(c.Name)
		}
		return c, checkOpID(c)
	case "resolve":
		return parseResolve(c, rest)
	case "amend":
		c.OpID, c.Text = cut(rest)
		if c.OpID == "" || strings.TrimSpace(c.Text) == "" {
			return c, usageErr(c.Name)
		}
	case "grant":
		return parseGrant(c, rest)
	case "grants":
		if strings.TrimSpace(rest) != "" {
			return c, usageErr(c.Name)
		}
	case "revoke":
		c.OpID = strings.TrimSpace(rest)
		if c.OpID == "" || strings.ContainsFunc(c.OpID, unicode.IsSpace) {
			return c, usageErr(c.Name)
		}
	case "code":
		f := strings.Fields(rest)
		if len(f) != 2 {
			return c, usageErr(c.Name)
		}
		c.OpID, c.Text = f[0], f[1]
	case "review":
		c.OpID = strings.TrimSpace(rest)
		if c.OpID == "" || strings.ContainsFunc(c.OpID, unicode.IsSpace) {
			return c, usageErr(c.Name)
		}
		return c, checkOpID(c)
	case "approve", "reject":
		// The console's own answers to a waiting approval, which it reads before
		// they get here; anywhere else a person decides with a card's button.
		return c, fmt.Errorf("%w: %s", ErrUsage, DecideByTap)
	default:
		return c, fmt.Errorf("%w: unknown command /%s; try /help", ErrUsage, c.Name)
	}
	return c, nil
}

func parseResolve(c Command, rest string) (Command, error) {
	f := strings.Fields(rest)
	if len(f) != 2 || (f[1] != "delivered" && f[1] != "not_delivered") {
		return c, usageErr(c.Name)
	}
	c.OpID, c.Delivered = f[0], f[1] == "delivered"
	return c, checkOpID(c)
}

// parseGrant reads "/grant <tool> <chat> <duration>" (a window grant) or
// "/grant <task_id> [code]" (a task's list, then its approval).
func parseGrant(c Command, rest string) (Command, error) {
	f := strings.Fields(rest)
	switch {
	case len(f) == 3:
		d, err := time.ParseDuration(f[2])
		if err != nil || d <= 0 {
			return c, fmt.Errorf("%w: /grant %s %s <duration>: a duration such as 30m or 2h, got %q", ErrUsage, f[0], f[1], f[2])
		}
		c.Tool, c.Target, c.For = f[0], f[1], d
		return c, checkTarget(c)
	case len(f) == 1 || len(f) == 2:
		c.OpID = f[0]
		if len(f) == 2 {
			c.Text = f[1]
		}
	default:
		return c, usageErr(c.Name)
	}
	return c, nil
}

// checkTarget refuses, with the command's usage line, a target that names no
// Telegram chat: caught here, before the handler journals a task and a call that
// could only fail and wait for a repair.
func checkTarget(c Command) error {
	if _, err := policy.NormalizeTarget(c.Target); err != nil {
		return fmt.Errorf("%w; %w", usageErr(c.Name), err)
	}
	return nil
}

// checkOpID refuses, with the command's usage line, an id that cannot be an
// operation's (a chat id, a typo): before anything is journaled or looked up.
func checkOpID(c Command) error {
	if !journal.IsOperationID(c.OpID) {
		return fmt.Errorf("%w; %q is not an operation id (%s…, as /ops lists them)", usageErr(c.Name), c.OpID, journal.OperationIDPrefix)
	}
	return nil
}

// ForApprovers reports whether the named command is an approver's (it decides
// or grants): an approver who is no operator may give it.
func ForApprovers(name string) bool {
	switch name {
	case "amend", "grant", "grants", "revoke", "code", "review":
		return true
	}
	return false
}

// cut splits off the first word; rest is what follows the whitespace after it,
// untouched.
func cut(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	word, rest = s[:i], s[i:]
	// Drop exactly one separator (a space, or a newline for text on the next line).
	_, size := firstRune(rest)
	return word, rest[size:]
}

func firstRune(s string) (rune, int) {
	for i, r := range s {
		if i > 0 {
			return r, i
		}
	}
	return 0, len(s)
}

func usageErr(name string) error {
	for _, u := range Usage {
		if u.Name == name {
			return fmt.Errorf("%w: %s", ErrUsage, strings.TrimSpace("/"+u.Name+" "+u.Args))
		}
	}
	return ErrUsage
}

// Help is the text of /help.
func Help() string {
	var b strings.Builder
	for _, u := range Usage {
		fmt.Fprintf(&b, "/%s %s: %s\n", u.Name, u.Args, u.Doc)
	}
	return strings.ReplaceAll(b.String(), " :", ":")
}
