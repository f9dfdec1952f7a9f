package verifier

import (
	"context"
	"strings"

	"github.com/countersign/countersign/policy"
)

// Telegram's limits: one message holds 4096 UTF-16 code units, and a payload is at
// most ten messages; splitting a long text into messages is the Telegram layer's job.
const (
	messageLimit = 4096
	maxMessages  = 10
)

// schema checks the payload's form: the target, the text's presence and length (of
// the text as Telegram shows it, markup removed) and the markup of its parse mode.
func (c Checker) schema(_ context.Context, p *payload) []finding {
	var fs []finding
	if _, err := policy.NormalizeTarget(p.in.Target); err != nil {
		fs = append(fs, repairf("target %q is not a chat id or @username", p.in.Target))
	}
	if p.in.NoText {
		return fs
	}
	n := p.length()
	switch {
	case strings.TrimSpace(p.visible) == "":
		fs = append(fs, repairf("text is empty"))
	case n > maxMessages*messageLimit:
		fs = append(fs, stopf("text is %d characters long, more than %d messages hold (%d)", n, maxMessages, maxMessages*messageLimit))
	case c.cfg.MaxLength > 0 && n > c.cfg.MaxLength:
		fs = append(fs, repairf("text is %d characters long, max_length is %d", n, c.cfg.MaxLength))
	}
	switch mode := p.in.ParseMode; {
	case mode != "" && mode != "HTML" && mode != "MarkdownV2":
		fs = append(fs, repairf("parse mode %q is not HTML or MarkdownV2", mode))
	case p.markup != nil:
		fs = append(fs, repairf("%s: %v", mode, p.markup))
	}
	return fs
}
