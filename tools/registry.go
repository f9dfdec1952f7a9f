package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

// Registry is the set of tools a policy offers, by name.
type Registry struct {
	tools map[string]Tool
	names []string
	chats Chats
}

// Option gives NewRegistry what some tools act through beyond the sender.
type Option func(*options)

type options struct {
	files FileStore
	env   func(string) string
}

// WithEnv makes the declared HTTP tools read their header values from env (a
// process's os.Getenv, or a test's map) rather than from os.Getenv.
func WithEnv(env func(string) string) Option {
	return func(o *options) {
		if env != nil {
			o.env = env
		}
	}
}

// WithFiles gives the file tools (a photo, a document, an album) the store
// they keep what they send in. Without one, they refuse to prepare a file.
func WithFiles(s FileStore) Option { return func(o *options) { o.files = s } }

// NewRegistry builds every implemented tool with its dependencies and keeps those
// the policy declares. Every tool is implemented whatever the sender can do: a
// process that only prepares (an MCP server beside the bot) offers the same
// tools as the one that sends, and a commit of what this sender cannot do (a
// printer asked to pin) fails with nothing sent. A declared tool without an
// implementation, or whose declared side effect does not match what the
// implementation does, is an error: the bot must not start with a policy it
// cannot honour. An implemented tool the policy does not declare is not offered.
//
// A tool the policy declares with an http block is built from its declaration
// (NewHTTPTool); the environment its headers read is os.Getenv unless WithEnv
// says otherwise, and a variable they name that is not set is an error.
func NewRegistry(p *policy.Policy, sender Sender, opts ...Option) (*Registry, error) {
	o := options{env: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	can := capable(sender)
	media := Media{Store: o.files, Policy: p.Files, Downloader: can.downloader}
	implemented := map[string]Tool{}
	for _, t := range []Tool{
		PrepareReply{},
		SendMessage{Sender: sender},
		PublishPost{Sender: sender},
		EditMessage{Editor: can.editor},
		DeleteMessage{Deleter: can.deleter},
		PinMessage{Pinner: can.pinner},
		UnpinMessage{Pinner: can.pinner},
		SendPhoto(can.uploader, media),
		SendDocument(can.uploader, media),
		SendAlbum{Uploader: can.uploader, Media: media},
		SendPoll{Poller: can.poller},
		ForwardMessage(can.reposter),
		CopyMessage(can.reposter),
	} {
		implemented[t.Name()] = t
	}
	for _, name := range p.ToolNames() {
		if decl := p.Tools[name].HTTP; decl != nil {
			t, err := NewHTTPTool(name, *decl, o.env)
			if err != nil {
				return nil, err
			}
			implemented[name] = t
		}
	}
	r := &Registry{tools: map[string]Tool{}, chats: can.chats}
	for _, name := range p.ToolNames() {
		t, ok := implemented[name]
		if !ok {
			return nil, fmt.Errorf("tools: policy declares %q, which has no implementation", name)
		}
		_, commits := t.(Committer)
		if commits != (p.Tools[name].SideEffect == policy.SideEffectCommitted) {
			return nil, fmt.Errorf("tools: policy declares %q with side_effect %q, which it does not have", name, p.Tools[name].SideEffect)
		}
		// A policy may treat a state-setting tool as additive (a person settles
		// its unknowns), never the other way: repeating a send sends it twice.
		if commits && p.Class(name) == policy.StateSetting && ClassOf(t) != policy.StateSetting {
			return nil, fmt.Errorf("tools: policy declares %q state_setting, but a repeat of it adds to the world: it is %s", name, ClassOf(t))
		}
		r.tools[name] = t
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	return r, nil
}

// Get returns the named tool, if the policy offers it.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Chats is what reads the chats the tools reach (their name, type and this
// bot's right to post), or nil when the sender has no chats to read (the
// console).
func (r *Registry) Chats() Chats { return r.chats }

// Names returns the offered tools' names, sorted.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// capabilities are what a sender can do beyond sending a text, each
// standing in for what it cannot (unable).
type capabilities struct {
	editor     Editor
	deleter    Deleter
	pinner     Pinner
	uploader   Uploader
	downloader Downloader
	poller     Poller
	reposter   Reposter
	chats      Chats
}

func capable(sender Sender) capabilities {
	return capabilities{
		editor: as[Editor](sender), deleter: as[Deleter](sender), pinner: as[Pinner](sender),
		uploader: as[Uploader](sender), poller: as[Poller](sender), reposter: as[Reposter](sender),
		downloader: asOr[Downloader](sender, nil), chats: asOr[Chats](sender, nil),
	}
}

// as is sender as a T, or unable standing in for it.
func as[T any](sender Sender) T { return asOr(sender, any(unable{}).(T)) }

// asOr is sender as a T, or fallback.
func asOr[T any](sender Sender, fallback T) T {
	if v, ok := sender.(T); ok {
		return v
	}
	return fallback
}

// unable stands in for what a sender cannot do: every call fails with nothing
// sent, and says so.
type unable struct{}

// errUnable stops the call: nothing was sent, and no retry here can send it.
var errUnable = &RefusedError{Reason: "this process's transport cannot do this; nothing was sent", Err: errors.New("not supported by the transport")}

func (unable) Edit(context.Context, Edit) (Delivery, error)       { return Delivery{}, errUnable }
func (unable) Delete(context.Context, string, int64) error        { return errUnable }
func (unable) Pin(context.Context, string, int64, bool) error     { return errUnable }
func (unable) Unpin(context.Context, string, int64) error         { return errUnable }
func (unable) Pinned(context.Context, string) (int64, error)      { return 0, errUnable }
func (unable) Upload(context.Context, Upload) ([]Delivery, error) { return nil, errUnable }
func (unable) SendPoll(context.Context, string, string, action.Poll) (Delivery, error) {
	return Delivery{}, errUnable
}
func (unable) Repost(context.Context, string, string, int64, bool) (Delivery, error) {
	return Delivery{}, errUnable
}
