package verifier

import (
	"context"
	"net/url"
	"strings"

	"github.com/countersign/countersign/policy"
)

// Telegram's limits: one message holds 4096 UTF-16 code units, and a payload is at
// most ten messages; splitting a long text into messages is the Telegram layer's job.
const (
	messageLimit = 4096
	maxMessages  = 10
	captionLimit = 1024
)

// Telegram's limits on files through the public Bot API: a photo of at most
// 10 MB, any other file of at most 50 MB, and an album of 2 to 10 items.
const (
	MaxPhotoBytes    = 10 << 20
	MaxDocumentBytes = 50 << 20
	maxAlbum         = 10
)

// schema checks the payload's form: the target, the text's presence and length (of
// the text as Telegram shows it, markup removed) and the markup of its parse mode.
func (c Checker) schema(_ context.Context, p *payload) []finding {
	if p.in.URL != "" {
		return checkAddress(p.in)
	}
	var fs []finding
	if _, err := policy.NormalizeTarget(p.in.Target); err != nil {
		fs = append(fs, repairf("target %q is not a chat id or @username", p.in.Target))
	}
	fs = append(fs, files(p.in.Files)...)
	if p.in.NoText {
		return fs
	}
	n := p.length()
	if p.in.Options != nil {
		return append(fs, poll(n, p.in.Options)...)
	}
	switch {
	case p.in.Caption && n > captionLimit:
		fs = append(fs, repairf("caption is %d characters long, Telegram takes at most %d", n, captionLimit))
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

// files checks an action's files against Telegram's limits: each photo and
// document within its size, and an album (more than one file) of at most ten.
func files(fs []File) []finding {
	var out []finding
	if len(fs) > maxAlbum {
		out = append(out, repairf("%d files: an album holds at most %d", len(fs), maxAlbum))
	}
	for _, f := range fs {
		limit := int64(MaxDocumentBytes)
		if f.Kind == "photo" {
			limit = MaxPhotoBytes
		}
		switch {
		case f.Size == 0:
			out = append(out, repairf("%s %q is empty", f.Kind, f.Name))
		case f.Size > limit:
			out = append(out, repairf("%s %q is %d bytes, Telegram takes at most %d MB for a %s", f.Kind, f.Name, f.Size, limit>>20, f.Kind))
		}
	}
	return out
}

// checkAddress checks an HTTP request's address: an absolute URL, https unless it
// reaches this machine, on the host its target names, with no user info.
func checkAddress(in Input) []finding {
	u, err := url.Parse(in.URL)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return []finding{repairf("address %q is not an absolute URL", in.URL)}
	case u.User != nil:
		return []finding{stopf("address %q carries user info", in.URL)}
	case u.Scheme != "https" && !(u.Scheme == "http" && policy.IsLoopback(u.Hostname())):
		return []finding{stopf("address %q is not https", in.URL)}
	case !strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), in.Target):
		return []finding{stopf("address %q is not on the target host %s", in.URL, in.Target)}
	}
	return nil
}

// Telegram's limits on a poll: a question of 1 to 300 characters, and 2 to 12
// options of 1 to 100 characters each.
const (
	maxPollQuestion = 300
	maxPollOption   = 100
	minPollOptions  = 2
	maxPollOptions  = 12
)

// poll checks a poll of question length n and options against Telegram's
// limits.
func poll(n int, options []string) []finding {
	var out []finding
	switch {
	case n == 0:
		out = append(out, repairf("the question is empty"))
	case n > maxPollQuestion:
		out = append(out, repairf("the question is %d characters long, Telegram takes at most %d", n, maxPollQuestion))
	}
	if len(options) < minPollOptions || len(options) > maxPollOptions {
		out = append(out, repairf("%d options: a poll has %d to %d", len(options), minPollOptions, maxPollOptions))
	}
	for i, o := range options {
		switch u := Units(o); {
		case strings.TrimSpace(o) == "":
			out = append(out, repairf("option %d is empty", i+1))
		case u > maxPollOption:
			out = append(out, repairf("option %d is %d characters long, Telegram takes at most %d", i+1, u, maxPollOption))
		}
	}
	return out
}
