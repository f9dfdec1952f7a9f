package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load reads and validates the policy file at path. Errors name the file, the line and
// the field; a missing file is ErrNoFile.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("policy: %s: %w", path, ErrNoFile)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	p, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("policy: %s:\n%w", path, err)
	}
	return p, nil
}

// Parse decodes and validates a policy. Unknown keys, wrong types, bad durations and
// negative budgets are errors; the returned error is an Errors list, one FieldError
// per problem with its line. Keys left unset take the Default* values; an explicit
// zero is kept as zero.
func Parse(r io.Reader) (*Policy, error) {
	var root yaml.Node
	if err := yaml.NewDecoder(r).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{Field: "tools", Msg: "missing: the policy is empty"}}
		}
		return nil, Errors{{Field: "(file)", Msg: "not valid YAML: " + err.Error()}}
	}
	d := &decoder{lines: map[string]int{}}
	p := &Policy{
		RetryBudget:  DefaultRetryBudget,
		RepairBudget: DefaultRepairBudget,
		WaitBudget:   DefaultWaitBudget,
		Backoff:      Backoff{Base: DefaultBackoffBase, Cap: DefaultBackoffCap, Jitter: DefaultJitter},
		LoopGuard:    DefaultLoopGuard(),
		ApprovalTTL:  DefaultApprovalTTL,
		EnvelopeTTL:  DefaultEnvelopeTTL,
		Verify:       Verify{DuplicateWindow: DefaultDuplicateWindow},
		Model:        DefaultModel(),
	}
	d.policy(root.Content[0], p)
	// Report every problem at once: the rules that span fields too, except on a
	// field whose value could not be read in the first place.
	var verrs Errors
	if err := p.validate(d.lines, d.unread); err != nil {
		verrs = err.(Errors)
	}
	bad := map[string]bool{}
	for _, e := range d.errs {
		bad[e.Field] = true
	}
	for _, e := range verrs {
		if !bad[e.Field] && !bad[strings.TrimSuffix(e.Field, ".side_effect")] {
			d.errs = append(d.errs, e)
		}
	}
	if len(d.errs) > 0 {
		d.errs.sort()
		return nil, d.errs
	}
	p.normalizeTargets()
	return p, nil
}

// decoder walks the YAML tree by hand so that every error can name its field and line.
type decoder struct {
	errs  Errors
	lines map[string]int
}

// unread reports whether the value of field, or of a field under it, could not be
// read: its error is reported already.
func (d *decoder) unread(field string) bool {
	for _, e := range d.errs {
		if e.Field == field || strings.HasPrefix(e.Field, field+".") || strings.HasPrefix(e.Field, field+"[") {
			return true
		}
	}
	return false
}

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// mapping calls the handler of each key in n and reports unknown and repeated keys.
func (d *decoder) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string)) {
	if n.Kind != yaml.MappingNode {
		if n.Tag != "!!null" {
			d.errorf(n, orRoot(path), "want a mapping of keys, got %s", describe(n))
		}
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := join(path, k.Value)
		handle, ok := fields[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode || k.Value == "":
			d.errorf(k, orRoot(path), "want a key name, got %s", describe(k))
		case !ok:
			d.errorf(k, field, "unknown key")
		case seen[k.Value]:
			d.errorf(k, field, "repeated key")
		default:
			seen[k.Value] = true
			d.lines[field] = k.Line
			handle(v, field)
		}
	}
}

func (d *decoder) policy(n *yaml.Node, p *Policy) {
	d.mapping(n, "", map[string]func(*yaml.Node, string){
		"tools":         func(n *yaml.Node, f string) { p.Tools = d.tools(n, f) },
		"retry_budget":  func(n *yaml.Node, f string) { d.int(n, f, &p.RetryBudget) },
		"repair_budget": func(n *yaml.Node, f string) { d.int(n, f, &p.RepairBudget) },
		"wait_budget":   func(n *yaml.Node, f string) { d.duration(n, f, &p.WaitBudget) },
		"backoff":       func(n *yaml.Node, f string) { d.backoff(n, f, &p.Backoff) },
		"loop_guard":    func(n *yaml.Node, f string) { d.loopGuard(n, f, &p.LoopGuard) },
		"approval_ttl":  func(n *yaml.Node, f string) { d.duration(n, f, &p.ApprovalTTL) },
		"access": func(n *yaml.Node, f string) {
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"operators": func(n *yaml.Node, f string) { p.Access.Operators = d.ids(n, f) },
				"approvers": func(n *yaml.Node, f string) { p.Access.Approvers = d.ids(n, f) },
			})
		},
		"auto_approve": func(n *yaml.Node, f string) { p.AutoApprove = d.autoApprove(n, f) },
		"envelope_ttl": func(n *yaml.Node, f string) { d.duration(n, f, &p.EnvelopeTTL) },
		"verify":       func(n *yaml.Node, f string) { d.verify(n, f, &p.Verify) },
		"model":        func(n *yaml.Node, f string) { d.model(n, f, &p.Model) },
		"files":        func(n *yaml.Node, f string) { d.files(n, f, &p.Files) },
	})
}

func (d *decoder) backoff(n *yaml.Node, path string, b *Backoff) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"base":   func(n *yaml.Node, f string) { d.duration(n, f, &b.Base) },
		"cap":    func(n *yaml.Node, f string) { d.duration(n, f, &b.Cap) },
		"jitter": func(n *yaml.Node, f string) { d.float(n, f, &b.Jitter) },
	})
}

func (d *decoder) tools(n *yaml.Node, path string) map[string]Tool {
	tools := map[string]Tool{}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping of tool names, got %s", describe(n))
		return tools
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, body := n.Content[i].Value, n.Content[i+1]
		var t Tool
		hasSideEffect := false
		field := join(path, name)
		d.lines[field] = n.Content[i].Line
		d.mapping(body, field, map[string]func(*yaml.Node, string){
			"side_effect": func(n *yaml.Node, f string) {
				hasSideEffect = true
				t.SideEffect = SideEffect(d.enum(n, f, string(SideEffectNone), string(SideEffectCommitted)))
			},
			"approval": func(n *yaml.Node, f string) {
				t.Approval = Approval(d.enum(n, f, string(ApprovalRequired), string(ApprovalNone)))
			},
			"idempotency": func(n *yaml.Node, f string) {
				t.Idempotency = Idempotency(d.enum(n, f, string(Additive), string(StateSetting)))
			},
		})
		if !hasSideEffect && body.Kind == yaml.MappingNode {
			d.errorf(n.Content[i], field+".side_effect", "missing: say %q or %q", SideEffectNone, SideEffectCommitted)
		}
		tools[name] = t
	}
	return tools
}

func (d *decoder) autoApprove(n *yaml.Node, path string) []AutoApprove {
	return sequence(d, n, path, "rules", func(item *yaml.Node, field string) AutoApprove {
		var r AutoApprove
		d.mapping(item, field, map[string]func(*yaml.Node, string){
			"tool":  func(n *yaml.Node, f string) { r.Tool = d.string(n, f) },
			"chats": func(n *yaml.Node, f string) { r.Chats = d.strings(n, f) },
		})
		return r
	})
}

// sequence decodes a YAML list item by item, recording each item's line; want
// names the items in the error for a value that is not a list.
func sequence[T any](d *decoder, n *yaml.Node, field, want string, item func(n *yaml.Node, field string) T) []T {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, field, "want a list of %s, got %s", want, describe(n))
		return nil
	}
	out := make([]T, 0, len(n.Content))
	for i, it := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		d.lines[f] = it.Line
		out = append(out, item(it, f))
	}
	return out
}

func (d *decoder) scalar(n *yaml.Node, field, want string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		d.errorf(n, field, "want %s, got %s", want, describe(n))
		return false
	}
	return true
}

func (d *decoder) int(n *yaml.Node, field string, dst *int) {
	if !d.scalar(n, field, "a whole number") {
		return
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil || n.Tag != "!!int" {
		d.errorf(n, field, "want a whole number, got %q", n.Value)
		return
	}
	*dst = v
}

func (d *decoder) float(n *yaml.Node, field string, dst *float64) {
	if !d.scalar(n, field, "a number") {
		return
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || (n.Tag != "!!float" && n.Tag != "!!int") {
		d.errorf(n, field, "want a number, got %q", n.Value)
		return
	}
	*dst = v
}

func (d *decoder) bool(n *yaml.Node, field string, dst *bool) {
	if !d.scalar(n, field, "true or false") {
		return
	}
	if n.Tag != "!!bool" {
		d.errorf(n, field, "want true or false, got %q", n.Value)
		return
	}
	*dst = n.Value == "true"
}

func (d *decoder) duration(n *yaml.Node, field string, dst *time.Duration) {
	if !d.scalar(n, field, "a duration") {
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.errorf(n, field, "bad duration %q: write it like 30s, 5m or 24h", n.Value)
		return
	}
	*dst = v
}

func (d *decoder) string(n *yaml.Node, field string) string {
	if !d.scalar(n, field, "a string") {
		return ""
	}
	return n.Value
}

func (d *decoder) enum(n *yaml.Node, field string, allowed ...string) string {
	v := d.string(n, field)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	if v != "" || n.Kind == yaml.ScalarNode {
		d.errorf(n, field, "want one of %q, got %q", allowed, v)
	}
	return ""
}

func (d *decoder) strings(n *yaml.Node, field string) []string {
	out := sequence(d, n, field, "strings", d.string)
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

func (d *decoder) ids(n *yaml.Node, field string) []int64 {
	out := sequence(d, n, field, "Telegram user ids", func(item *yaml.Node, f string) int64 {
		v, err := strconv.ParseInt(item.Value, 10, 64)
		if item.Kind != yaml.ScalarNode || err != nil {
			d.errorf(item, f, "want a Telegram user id, got %s", describe(item))
			return 0
		}
		return v
	})
	return slices.DeleteFunc(out, func(id int64) bool { return id == 0 })
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(file)"
	}
	return path
}
