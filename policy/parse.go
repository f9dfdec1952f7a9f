package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
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
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		line, problem := syntaxError(src, err)
		return nil, Errors{{Line: line, Field: "(file)", Msg: "not valid YAML: " + problem}}
	}
	if root.Kind == 0 {
		return nil, Errors{{Field: "tools", Msg: "missing: the policy is empty"}}
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
		Verify:       Verify{DuplicateWindow: DefaultDuplicateWindow, RejectedWindow: DefaultRejectedWindow},
		Model:        DefaultModel(),
	}
	reminders := DefaultReminders()
	p.Reminders = &reminders
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
				"operators":  func(n *yaml.Node, f string) { p.Access.Operators = d.ids(n, f) },
				"approvers":  func(n *yaml.Node, f string) { p.Access.Approvers = d.ids(n, f) },
				"escalation": func(n *yaml.Node, f string) { p.Access.Escalation = d.ids(n, f) },
			})
		},
		"auto_approve": func(n *yaml.Node, f string) { p.AutoApprove = d.autoApprove(n, f) },
		"envelope_ttl": func(n *yaml.Node, f string) { d.duration(n, f, &p.EnvelopeTTL) },
		"verify":       func(n *yaml.Node, f string) { d.verify(n, f, &p.Verify) },
		"model":        func(n *yaml.Node, f string) { d.model(n, f, &p.Model) },
		"files":        func(n *yaml.Node, f string) { d.files(n, f, &p.Files) },
		"reminders":    func(n *yaml.Node, f string) { d.reminders(n, f, p.Reminders) },
		"quorum": func(n *yaml.Node, f string) {
			p.Quorum = sequence(d, n, f, "rules", func(item *yaml.Node, field string) Quorum {
				var q Quorum
				d.mapping(item, field, map[string]func(*yaml.Node, string){
					"tool":      func(n *yaml.Node, f string) { q.Tool = d.string(n, f) },
					"chats":     func(n *yaml.Node, f string) { q.Chats = d.strings(n, f) },
					"approvals": func(n *yaml.Node, f string) { d.int(n, f, &q.Approvals) },
					"step_up":   func(n *yaml.Node, f string) { q.StepUp = d.factor(n, f) },
				})
				return q
			})
		},
		"escalate_after": func(n *yaml.Node, f string) { d.float(n, f, &p.EscalateAfter) },
		"grant_max":      func(n *yaml.Node, f string) { d.duration(n, f, &p.GrantMax) },
		"self_approval": func(n *yaml.Node, f string) {
			p.SelfApproval = new(bool)
			d.bool(n, f, p.SelfApproval)
		},
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
			"http":      func(n *yaml.Node, f string) { t.HTTP = d.http(n, f) },
			"approvals": func(n *yaml.Node, f string) { d.int(n, f, &t.Approvals) },
			"step_up":   func(n *yaml.Node, f string) { t.StepUp = d.factor(n, f) },
		})
		if t.HTTP != nil && t.Idempotency == "" {
			t.Idempotency = t.HTTP.Class() // derived; a contradiction is Validate's
		}
		if !hasSideEffect && body.Kind == yaml.MappingNode {
			d.errorf(n.Content[i], field+".side_effect", "missing: say %q or %q", SideEffectNone, SideEffectCommitted)
		}
		tools[name] = t
	}
	return tools
}

// http decodes a tool's http block (see HTTP); Validate checks what it says.
func (d *decoder) http(n *yaml.Node, path string) *HTTP {
	h := &HTTP{}
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"method":      func(n *yaml.Node, f string) { h.Method = d.string(n, f) },
		"url":         func(n *yaml.Node, f string) { h.URL = d.string(n, f) },
		"hosts":       func(n *yaml.Node, f string) { h.Hosts = d.strings(n, f) },
		"headers":     func(n *yaml.Node, f string) { h.Headers = d.headers(n, f) },
		"body_schema": func(n *yaml.Node, f string) { h.BodySchema = d.json(n, f) },
		"success": func(n *yaml.Node, f string) {
			h.Success = sequence(d, n, f, "HTTP statuses", func(item *yaml.Node, f string) int {
				var v int
				d.int(item, f, &v)
				return v
			})
		},
		"evidence":    func(n *yaml.Node, f string) { h.Evidence = d.string(n, f) },
		"idempotency": func(n *yaml.Node, f string) { h.Idempotency = d.enum(n, f, IdempotencyHeader, IdempotencyNone) },
		"reconcile": func(n *yaml.Node, f string) {
			if n.Tag == "!!null" {
				return // written out: no reconcile read
			}
			h.Reconcile = &Reconcile{}
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"url": func(n *yaml.Node, f string) { h.Reconcile.URL = d.string(n, f) },
			})
		},
		"timeout": func(n *yaml.Node, f string) { d.duration(n, f, &h.Timeout) },
	})
	if n.Kind != yaml.MappingNode {
		return nil // reported by mapping, or a null: no declaration
	}
	return h
}

// headers decodes an http block's headers: each name maps to {env, prefix} or
// {value}.
func (d *decoder) headers(n *yaml.Node, path string) map[string]HeaderValue {
	out := map[string]HeaderValue{}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want a mapping of header names, got %s", describe(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, body := n.Content[i], n.Content[i+1]
		field := join(path, k.Value)
		if _, dup := out[k.Value]; dup || k.Kind != yaml.ScalarNode {
			d.errorf(k, field, "repeated key, or not a header name")
			continue
		}
		d.lines[field] = k.Line
		var v HeaderValue
		if body.Kind != yaml.MappingNode {
			d.errorf(body, field, "want {env: NAME} or {value: \"...\"}, got %s (a secret is never written here)", describe(body))
			continue
		}
		d.mapping(body, field, map[string]func(*yaml.Node, string){
			"env":    func(n *yaml.Node, f string) { v.Env = d.string(n, f) },
			"prefix": func(n *yaml.Node, f string) { v.Prefix = d.string(n, f) },
			"value":  func(n *yaml.Node, f string) { v.Value = d.string(n, f) },
		})
		out[k.Value] = v
	}
	return out
}

// json decodes any YAML value into its JSON form (a JSON Schema written in YAML).
func (d *decoder) json(n *yaml.Node, field string) json.RawMessage {
	var v any
	if err := n.Decode(&v); err != nil {
		d.errorf(n, field, "not a value: %v", err)
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || v == nil {
		d.errorf(n, field, "want a JSON Schema (a mapping with string keys), got %s", describe(n))
		return nil
	}
	return b
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

// factor decodes a step_up: one of Factors; whether this version can check
// it is Validate's.
func (d *decoder) factor(n *yaml.Node, field string) Factor {
	names := make([]string, len(Factors))
	for i, f := range Factors {
		names[i] = string(f)
	}
	return Factor(d.enum(n, field, names...))
}

func (d *decoder) strings(n *yaml.Node, field string) []string {
	out := sequence(d, n, field, "strings", d.string)
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

func (d *decoder) ids(n *yaml.Node, field string) []UserID {
	out := sequence(d, n, field, "Telegram user ids", func(item *yaml.Node, f string) UserID {
		v, err := strconv.ParseInt(item.Value, 10, 64)
		if item.Kind != yaml.ScalarNode || err != nil {
			d.errorf(item, f, "want a Telegram user id, got %s", describe(item))
			return 0
		}
		return UserID(v)
	})
	return slices.DeleteFunc(out, func(id UserID) bool { return id == 0 })
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

// yamlLine is the "line N: " yaml.v3 puts before a syntax error's problem.
var yamlLine = regexp.MustCompile(`^yaml: (?:line \d+: )?`)

// syntaxError is the line of a YAML syntax error, and its problem without
// yaml.v3's own line. yaml.v3 names the line where the construct around the
// problem began, counted from 0 (a key indented one space too few on line 6
// is "line 1"), so the line is found here: the first whose inclusion makes
// the text fail with the same problem. 0 when none does (a problem that
// needs the whole text).
func syntaxError(src []byte, err error) (line int, problem string) {
	problem = yamlLine.ReplaceAllString(err.Error(), "")
	lines := bytes.SplitAfter(src, []byte("\n"))
	var n yaml.Node
	for i := range lines {
		perr := yaml.Unmarshal(bytes.Join(lines[:i+1], nil), &n)
		if perr != nil && yamlLine.ReplaceAllString(perr.Error(), "") == problem {
			return i + 1, problem
		}
	}
	return 0, problem
}
