package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
)

// A person's rejection is an answer: the same payload asked again, in the same
// task or from the same chat, is stopped by the verifier within the policy's
// verify.rejected_window, unless the call says what changed since (the
// "changed" argument every commit tool takes). What it says travels in the
// payload (Payload.Changed): it is covered by the hash, journaled, and shown on
// the card, so that the approver reads the reason to ask again beside the
// request.

// changedParam is the schema of the "changed" argument, as models and MCP
// clients see it.
var changedParam = map[string]any{"type": "string", "description": "only when asking again for what a person rejected: " +
	"what changed since (a new fact, another reason, the person asked for it again). The same request without it is refused " +
	"while the rejection is recent; the approver's card shows what you write here."}

// committing is p with the "changed" argument every commit tool takes.
func committing(p Params) Params {
	if p.Properties == nil {
		p.Properties = map[string]any{}
	}
	p.Properties[policy.ChangedArg] = changedParam
	return p
}

// StatedChange reads a call's "changed" argument: what the caller says changed
// since a person rejected the same payload, trimmed; "" when it says nothing. A
// value that is not a string is an *ArgsError naming tool.
func StatedChange(tool string, raw json.RawMessage) (string, error) {
	in, err := readArgs(tool, raw, `{..., "changed": "what changed since the rejection"}`)
	if err != nil {
		return "", err
	}
	s, err := in.string(policy.ChangedArg, false)
	if err != nil {
		return "", err
	}
	if secret.Contains(s) {
		return "", in.refuse("%s contains what looks like a secret (a bot token or an API key); it is neither sent nor stored", policy.ChangedArg)
	}
	return strings.TrimSpace(s), nil
}

// Content is what of p a person judged when they approved or rejected it,
// besides its text (which the verifier compares as its recipient reads it,
// verifier.Seen): every other field of the payload, as a digest. The text's
// split into parts and its parse mode are the text's; what the caller says
// changed is no part of what was asked.
func Content(p action.Payload) string {
	p.Text, p.Parts, p.ParseMode, p.Changed = "", nil, "", ""
	b, _ := json.Marshal(p) // a struct of strings always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
