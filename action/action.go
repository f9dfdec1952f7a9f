// Package action is the contract every call ends in and every commit
// delivers: the payload (a typed action, exactly what will leave, which an
// approval binds to by its SHA-256) and the normalized result (status, side
// effect, next action, evidence, cause). It is a leaf: the journal stores
// these values, the tools make them, the surfaces show them, and none of
// them needs the others to do so.
package action

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// The kinds of action a payload names, written by the tools and read by the
// surfaces that word what a commit did.
const (
	SendMessage    = "send_message"
	PublishPost    = "publish_post"
	EditMessage    = "edit_message"
	DeleteMessage  = "delete_message"
	PinMessage     = "pin_message"
	UnpinMessage   = "unpin_message"
	HTTP           = "http_request"
	SendPhoto      = "send_photo"
	SendDocument   = "send_document"
	SendAlbum      = "send_album"
	SendPoll       = "send_poll"
	CopyMessage    = "copy_message"
	ForwardMessage = "forward_message"
)

// Payload is exactly what a commit will deliver. An approval binds to its SHA256.
type Payload struct {
	Action    string `json:"action"`
	Target    string `json:"target,omitempty"`
	Text      string `json:"text"`
	ParseMode string `json:"parse_mode,omitempty"`
	// Parts is the text split into messages Telegram accepts, when it needs more
	// than one. It is fixed at prepare time and covered by the hash, so a resumed
	// commit sends the same parts a human approved.
	Parts []string `json:"parts,omitempty"`
	// MessageID is the message in Target that the action acts on (an edit), and
	// Before what it reads now: the approver sees the change, and approves it.
	MessageID int64  `json:"message_id,omitempty"`
	Before    string `json:"before,omitempty"`
	// Removes marks an action that takes the message away (a delete); Notify
	// one that tells the chat's members (a pin that is not silent).
	Removes bool `json:"removes,omitempty"`
	Notify  bool `json:"notify,omitempty"`
	// Caption marks an edit of a file's caption rather than of a text.
	Caption bool `json:"caption,omitempty"`
	// Files are the files the action sends (a photo, a document, an album's
	// items), each named by its content's SHA-256; Text is a single file's
	// caption.
	Files []File `json:"files,omitempty"`
	// Request is the HTTP request a declared HTTP tool makes, every byte of it
	// but the values of the headers that come from the environment (secrets,
	// named here by their variable). Target is its URL's host, Text its body
	// as the card shows it.
	Request *HTTPRequest `json:"request,omitempty"`
	// Poll is a poll's options and settings; Text is its question.
	Poll *Poll `json:"poll,omitempty"`
	// From is the chat a copy or a forward takes message MessageID from;
	// Target is where it goes.
	From string `json:"from,omitempty"`
	// Changed is what the call said changed since a person rejected the same
	// payload ("changed", see tools/changed.go): the card shows it, and the verifier
	// lets the payload be asked again.
	Changed string `json:"changed,omitempty"`
	// Requoted is what changed in the message the payload quotes (Before) since
	// a person approved it as it read then: the operator asked again, quoting
	// it as it reads now, and the card says why.
	Requoted string `json:"requoted,omitempty"`
	// Audience is the chat the action reaches as its members knew it when the
	// payload was made (its name and type, read from the service): the card
	// names it, and it is read again right before the write, so that a chat
	// renamed or of another kind since is asked about again. Nil when the
	// action reaches no chat, or the chat could not be read.
	Audience *Audience `json:"audience,omitempty"`
}

// Audience is a chat as its members know it.
type Audience struct {
	// Name is the chat's title, or a person's first and last name.
	Name string `json:"name"`
	// Username is the chat's public @username, without the @; "" for none.
	Username string `json:"username,omitempty"`
	// Type is Telegram's: "private", "group", "supergroup" or "channel".
	Type string `json:"type"`
}

// String is the audience as a card names it: "\"Team\" @team, a supergroup".
func (a Audience) String() string {
	name := a.Name
	if a.Username != "" {
		name += " @" + a.Username
	}
	return fmt.Sprintf("%q, %s", strings.TrimSpace(name), ChatKind(a.Type))
}

// ChatKind is a chat's type in the words a card uses.
func ChatKind(t string) string {
	switch t {
	case "private":
		return "a private chat"
	case "group":
		return "a group"
	case "supergroup":
		return "a supergroup"
	case "channel":
		return "a channel"
	}
	return "a chat of type " + t
}

// Messages returns the texts to deliver, one per message.
func (p Payload) Messages() []string {
	if len(p.Parts) > 0 {
		return p.Parts
	}
	return []string{p.Text}
}

// SHA256 is the hex digest of the payload's canonical JSON form.
func (p Payload) SHA256() string {
	b, _ := json.Marshal(p) // a struct of strings always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Poll is a poll's answers and settings.
type Poll struct {
	Options []string `json:"options"`
	// Public polls show who voted; Telegram's polls are anonymous by default.
	Public   bool `json:"public,omitempty"`
	Multiple bool `json:"multiple,omitempty"`
}
