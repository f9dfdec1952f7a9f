package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// sendFile is a tool that sends one file to a chat with a caption: a photo or a
// document (commit_send_photo.go, commit_send_document.go say which). It is
// additive: an unknown outcome goes to a person, never sent again.
type sendFile struct {
	name, doc, action, kind string
	uploader                Uploader
	media                   Media
}

var (
	_ Reader    = sendFile{}
	_ Presenter = sendFile{}
	_ Checked   = sendFile{}
	_ Committer = sendFile{}
)

func (t sendFile) Name() string        { return t.name }
func (t sendFile) Description() string { return t.doc }

func (t sendFile) Params() Params {
	return committing(Params{Properties: map[string]any{
		"chat_id":    map[string]any{"type": "string", "description": "the chat id (\"-1001234567890\") or @username to send to"},
		"file":       map[string]any{"type": "string", "description": "the " + t.kind + ": a path under a folder the policy opens (files.roots), an http(s) address, or telegram:<file_id> of a file attached in the chat; it is read once, now, and the bytes read are what is sent"},
		"caption":    map[string]any{"type": "string", "description": "the exact caption, at most 1024 characters; omit for none"},
		"parse_mode": map[string]any{"type": "string", "enum": []string{"HTML", "MarkdownV2"}, "description": "of the caption; omit for plain text"},
	}, Required: []string{"chat_id", "file"}})
}

// Prepare implements Tool; the operator calls PrepareFrom, which reads the file.
func (t sendFile) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

const sendFileShape = `{"chat_id": "222", "file": "https://…/chart.png", "caption": "..."}`

// PrepareFrom implements Reader: it reads the file into the store and names it
// in the payload by its content.
func (t sendFile) PrepareFrom(ctx context.Context, raw json.RawMessage, _ Sent) (action.Payload, error) {
	in, err := readArgs(t.name, raw, sendFileShape)
	if err != nil {
		return action.Payload{}, err
	}
	chat, err := in.target()
	if err != nil {
		return action.Payload{}, err
	}
	caption, mode, err := in.caption()
	if err != nil {
		return action.Payload{}, err
	}
	source, err := in.string("file", true)
	if err != nil {
		return action.Payload{}, err
	}
	if strings.TrimSpace(source) == "" {
		return action.Payload{}, in.refuse("file is empty: name a path, an address or an attachment")
	}
	f, err := t.media.read(ctx, in, t.kind, source)
	if err != nil {
		return action.Payload{}, err
	}
	return action.Payload{Action: t.action, Target: chat, Text: caption, ParseMode: mode, Files: []action.File{f}}, nil
}

// Show implements Presenter: the file, and the photo itself.
func (t sendFile) Show(p action.Payload) Shown {
	s := Shown{TextLabel: "Caption", Files: p.Files}
	for _, f := range p.Files {
		s.Facts = append(s.Facts, "Sends the "+f.Describe())
	}
	if p.Text == "" {
		s.Facts = append(s.Facts, "No caption.")
	}
	if t.kind == action.FileDocument {
		s.Omitted = "what the document holds: the card names it by its SHA-256, and the bot keeps those exact bytes in its data folder (files/), where they can be opened"
	}
	return s
}

// Check implements Checked: the caption's and the file's limits.
func (t sendFile) Check(p action.Payload) verifier.Input { return fileChecks(p) }

// Idempotency implements Classed: each send adds a message.
func (t sendFile) Idempotency() policy.Idempotency { return policy.Additive }

// Commit implements Committer: the stored bytes, checked against the payload's
// sums, go out.
func (t sendFile) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	files, err := t.media.attach(ctx, p.Files)
	if err != nil {
		return action.Evidence{}, err
	}
	ds, err := t.uploader.Upload(ctx, Upload{Target: p.Target, Files: files, Caption: p.Text, ParseMode: p.ParseMode})
	if err != nil {
		return action.Evidence{}, err
	}
	return evidenceOf(ds), nil
}

// target reads and normalises chat_id.
func (in args) target() (string, error) {
	chat, err := in.chatID()
	if err != nil {
		return "", err
	}
	target, err := policy.NormalizeTarget(chat)
	if err != nil {
		return "", in.refuse("chat_id %s is not a chat id or @username", in.value("chat_id"))
	}
	return target, nil
}

// caption reads an optional caption and its parse mode.
func (in args) caption() (string, string, error) {
	caption, err := in.string("caption", false)
	if err != nil {
		return "", "", err
	}
	mode, err := in.parseMode()
	if err != nil {
		return "", "", err
	}
	if caption != "" {
		if err := in.checkText(caption); err != nil {
			return "", "", err
		}
	} else {
		mode = ""
	}
	return caption, mode, nil
}
