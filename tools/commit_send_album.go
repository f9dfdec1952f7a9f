package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

//go:embed commit_send_album.md
var sendAlbumDoc string

// SendAlbum is commit_send_album: 2 to 10 photos, or 2 to 10 documents, sent
// as one group (Telegram's sendMediaGroup), each with an optional caption. It
// is additive, and an album whose answer was lost may have landed whole or not
// at all: the envelope names every item for a person to look for.
type SendAlbum struct {
	Uploader Uploader
	Media    Media
}

var (
	_ Reader    = SendAlbum{}
	_ Presenter = SendAlbum{}
	_ Checked   = SendAlbum{}
	_ Classed   = SendAlbum{}
)

// Name implements Tool.
func (SendAlbum) Name() string { return "commit_send_album" }

// Description implements Tool.
func (SendAlbum) Description() string { return sendAlbumDoc }

// Params implements Tool.
func (SendAlbum) Params() Params {
	item := map[string]any{"type": "object", "properties": map[string]any{
		"file":    map[string]any{"type": "string", "description": "a path under files.roots, an http(s) address, or telegram:<file_id>"},
		"caption": map[string]any{"type": "string", "description": "this item's caption, at most 1024 characters"},
	}, "required": []string{"file"}}
	return committing(Params{Properties: map[string]any{
		"chat_id":    map[string]any{"type": "string", "description": "the chat id (\"-1001234567890\") or @username to send to"},
		"files":      map[string]any{"type": "array", "items": item, "minItems": 2, "maxItems": 10, "description": "the album's items, in order; each is read once, now"},
		"as":         map[string]any{"type": "string", "enum": []string{action.FilePhoto, action.FileDocument}, "description": "photo (default) or document: an album is all one or all the other"},
		"parse_mode": map[string]any{"type": "string", "enum": []string{"HTML", "MarkdownV2"}, "description": "of the captions; omit for plain text"},
	}, Required: []string{"chat_id", "files"}})
}

// Idempotency implements Classed: an album adds messages.
func (SendAlbum) Idempotency() policy.Idempotency { return policy.Additive }

// Prepare implements Tool; the operator calls PrepareFrom, which reads the files.
func (SendAlbum) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

const albumShape = `{"chat_id": "222", "files": [{"file": "a.png", "caption": "..."}, {"file": "b.png"}]}`

// albumItem is one item of the files argument.
type albumItem struct {
	File    string `json:"file"`
	Caption string `json:"caption"`
}

// PrepareFrom implements Reader: every item is read into the store, in order.
func (t SendAlbum) PrepareFrom(ctx context.Context, raw json.RawMessage, _ Sent) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, albumShape)
	if err != nil {
		return action.Payload{}, err
	}
	chat, err := in.target()
	if err != nil {
		return action.Payload{}, err
	}
	mode, err := in.parseMode()
	if err != nil {
		return action.Payload{}, err
	}
	kind, err := in.string("as", false)
	switch {
	case err != nil:
		return action.Payload{}, err
	case kind == "":
		kind = action.FilePhoto
	case kind != action.FilePhoto && kind != action.FileDocument:
		return action.Payload{}, in.refuse("as %q: want %q or %q", kind, action.FilePhoto, action.FileDocument)
	}
	items, ok := albumItems(in.value("files"))
	if !ok {
		return action.Payload{}, in.refuse("files: want a list of {\"file\": \"...\", \"caption\": \"...\"} (or of sources), got %s", kindOf(in.value("files")))
	}
	if len(items) < 2 || len(items) > 10 {
		return action.Payload{}, in.refuse("files: an album holds 2 to 10 items, got %d", len(items))
	}
	p := action.Payload{Action: action.SendAlbum, Target: chat, ParseMode: mode}
	for i, it := range items {
		if it.Caption != "" {
			if err := in.checkText(it.Caption); err != nil {
				return action.Payload{}, err
			}
		}
		f, err := t.Media.read(ctx, in, kind, it.File)
		if err != nil {
			return action.Payload{}, fmt.Errorf("item %d: %w", i+1, err)
		}
		f.Caption = it.Caption
		p.Files = append(p.Files, f)
	}
	// The captions, one a line, are the album's text: what the duplicate
	// check compares and an envelope quotes. Each item's own goes with it.
	var captions []string
	for _, f := range p.Files {
		if f.Caption != "" {
			captions = append(captions, f.Caption)
		}
	}
	p.Text = strings.Join(captions, "\n")
	if p.Text == "" {
		p.ParseMode = ""
	}
	return p, nil
}

// albumItems reads the files argument: a list of items, or of bare sources.
func albumItems(v json.RawMessage) ([]albumItem, bool) {
	var items []albumItem
	if v == nil {
		return nil, false
	}
	if json.Unmarshal(v, &items) == nil {
		return items, true
	}
	var sources []string
	if json.Unmarshal(v, &sources) != nil {
		return nil, false
	}
	// A failed decode above may have left zero items behind: start afresh.
	items = make([]albumItem, len(sources))
	for i, s := range sources {
		items[i] = albumItem{File: s}
	}
	return items, true
}

// Show implements Presenter: every item in order, with its caption.
func (SendAlbum) Show(p action.Payload) Shown {
	s := Shown{Files: p.Files}
	s.Facts = append(s.Facts, fmt.Sprintf("Sends an album of %d items, in this order:", len(p.Files)))
	for i, f := range p.Files {
		caption := "no caption"
		if f.Caption != "" {
			caption = "caption: " + f.Caption
		}
		s.Facts = append(s.Facts, fmt.Sprintf("%d. %s; %s", i+1, f.Describe(), caption))
	}
	return s
}

// Check implements Checked: each caption against its limit, and the files.
// The captions are checked as one text (links, house rules, duplicates).
func (SendAlbum) Check(p action.Payload) verifier.Input {
	in := fileChecks(p)
	in.Caption = false // the limit is each caption's, not the lines' together
	longest := ""
	for _, f := range p.Files {
		if verifier.Length(f.Caption, p.ParseMode) > verifier.Length(longest, p.ParseMode) {
			longest = f.Caption
		}
	}
	if verifier.Length(longest, p.ParseMode) > 1024 {
		in.Text, in.Caption = longest, true // the caption over it, checked as one
	}
	return in
}

// Commit implements Committer: the stored bytes of every item, as one group.
func (t SendAlbum) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	files, err := t.Media.attach(ctx, p.Files)
	if err != nil {
		return action.Evidence{}, err
	}
	ds, err := t.Uploader.Upload(ctx, Upload{Target: p.Target, Files: files, ParseMode: p.ParseMode})
	if err != nil {
		return action.Evidence{}, err
	}
	return evidenceOf(ds), nil
}
