package tools

import (
	"fmt"
	"os"
	"sort"

	"github.com/countersign/countersign/policy"
)

// Registry is the set of tools a policy offers, by name.
type Registry struct {
	tools map[string]Tool
	names []string
}

// NewRegistry builds every implemented tool with its dependencies and keeps those
// the policy declares; commit_edit_message is implemented when sender is also an
// Editor. A declared tool without an implementation, or whose declared
// side effect does not match what the implementation does, is an error: the bot must
// not start with a policy it cannot honour. An implemented tool the policy does not
// declare is not offered.
//
// A tool the policy declares with an http block is built from its declaration
// (NewHTTPTool); the environment its headers read is os.Getenv unless WithEnv
// says otherwise, and a variable they name that is not set is an error.
func NewRegistry(p *policy.Policy, sender Sender, opts ...Option) (*Registry, error) {
	o := options{env: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	implemented := map[string]Tool{}
	for _, t := range []Tool{
		PrepareReply{},
		SendMessage{Sender: sender},
		PublishPost{Sender: sender},
	} {
		implemented[t.Name()] = t
	}
	if ed, ok := sender.(Editor); ok { // a sender that can edit what it sent
		implemented["commit_edit_message"] = EditMessage{Editor: ed}
	}
	if d, ok := sender.(Deleter); ok { // and delete it
		implemented["commit_delete_message"] = DeleteMessage{Deleter: d}
	}
	if pn, ok := sender.(Pinner); ok { // and pin it
		implemented["commit_pin_message"] = PinMessage{Pinner: pn}
		implemented["commit_unpin_message"] = UnpinMessage{Pinner: pn}
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
	r := &Registry{tools: map[string]Tool{}}
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

// Names returns the offered tools' names, sorted.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Option changes how NewRegistry builds the tools.
type Option func(*options)

type options struct{ env func(string) string }

// WithEnv makes the declared HTTP tools read their header values from env (a
// process's os.Getenv, or a test's map) rather than from os.Getenv.
func WithEnv(env func(string) string) Option {
	return func(o *options) {
		if env != nil {
			o.env = env
		}
	}
}
