package policy

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// DefaultDuplicateWindow is how far back the verifier looks for the same text to the
// same target when verify.duplicate_window is unset. An explicit 0s turns the check off.
const DefaultDuplicateWindow = 24 * time.Hour

// DefaultRejectedWindow is how far back a payload a person rejected stops the same
// payload asked again, in the same task or from the same chat, when
// verify.rejected_window is unset. An explicit 0s turns the check off.
const DefaultRejectedWindow = 24 * time.Hour

// Verify configures the verifier's checks. Zero fields check nothing beyond the
// verifier's fixed rules: no length limit, no domain lists, no rules, no model.
type Verify struct {
	// DuplicateWindow is how far back the same text to the same target stops a
	// payload; 0 turns the duplicate check off.
	DuplicateWindow time.Duration `json:"duplicate_window"`
	// RejectedWindow is how far back a payload a person rejected stops the same
	// payload asked again in the same task or from the same chat, unless the
	// request says what changed (tools' "changed" argument); 0 turns the check off.
	RejectedWindow time.Duration `json:"rejected_window"`
	// MaxLength, when positive, is the longest text (in UTF-16 code units, as
	// Telegram counts) that passes without a repair.
	MaxLength int    `json:"max_length"`
	Links     Links  `json:"links"`
	Rules     []Rule `json:"rules"`
	// ModelCheck lists the tools whose payloads are also shown to a model.
	ModelCheck []string `json:"model_check"`
}

// Links narrows the domains a payload may link to. An empty AllowDomains allows every
// domain not in DenyDomains. An entry covers its subdomains too.
type Links struct {
	AllowDomains []string `json:"allow_domains"`
	DenyDomains  []string `json:"deny_domains"`
}

// Rule is one house rule for commits of Tool (empty: every commit_* tool) to Target
// (empty: every target). Each set field is a check; Reason is shown to the human
// beside any failure.
type Rule struct {
	Tool       string     `json:"tool"`
	Target     string     `json:"target"`
	Require    []Pattern  `json:"require"`
	Forbid     []Pattern  `json:"forbid"`
	MaxLength  int        `json:"max_length"`
	Hashtag    string     `json:"hashtag"`
	QuietHours QuietHours `json:"quiet_hours"`
	Timezone   Timezone   `json:"timezone"`
	Reason     string     `json:"reason"`
}

// Applies reports whether the rule covers a commit of tool to target. Targets compare
// as the chats they name (see NormalizeTarget): a rule for "@news_desk" covers
// "@News_Desk", one for "222" covers "+222".
func (r Rule) Applies(tool, target string) bool {
	if r.Tool == "" && !strings.HasPrefix(tool, "commit_") || r.Tool != "" && r.Tool != tool {
		return false
	}
	return r.Target == "" || sameTarget(r.Target, target)
}

// InQuietHours reports whether t falls in the rule's quiet hours, read in its time zone.
func (r Rule) InQuietHours(t time.Time) bool {
	return !r.QuietHours.IsZero() && r.QuietHours.Contains(t.In(r.Timezone.Location()))
}

// Pattern is a word or a /regular expression/ with optional flags i, m and s. A word
// matches whole, regardless of case: "free" matches "Free!" but not "freedom".
type Pattern struct {
	src string
	re  *regexp.Regexp
}

var slashed = regexp.MustCompile(`^/(.+)/([a-z]*)$`)

// ParsePattern reads a word or a /regex/flags. It returns an error for an empty word,
// an unknown flag or a regular expression that does not compile.
func ParsePattern(s string) (Pattern, error) {
	if strings.TrimSpace(s) == "" {
		return Pattern{}, errors.New("empty pattern")
	}
	if m := slashed.FindStringSubmatch(s); m != nil {
		if bad := strings.Trim(m[2], "ims"); bad != "" {
			return Pattern{}, fmt.Errorf("unknown flag %q: use i, m or s", bad[:1])
		}
		expr := m[1]
		if m[2] != "" {
			expr = "(?" + m[2] + ")" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return Pattern{}, fmt.Errorf("bad regular expression: %w", err)
		}
		return Pattern{src: s, re: re}, nil
	}
	return Pattern{src: s, re: wordRegexp(s)}, nil
}

// wordRegexp matches w case-insensitively where it is not part of a longer word.
func wordRegexp(w string) *regexp.Regexp {
	const word = `\pL\pN_`
	expr := "(?i)"
	if first, _ := utf8.DecodeRuneInString(w); isWordRune(first) {
		expr += `(?:^|[^` + word + `])`
	}
	expr += "(" + regexp.QuoteMeta(w) + ")"
	if last, _ := utf8.DecodeLastRuneInString(w); isWordRune(last) {
		expr += `(?:$|[^` + word + `])`
	}
	return regexp.MustCompile(expr)
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// Find returns the first text in s the pattern matches, and whether there is one. The
// zero Pattern matches nothing.
func (p Pattern) Find(s string) (string, bool) {
	if p.re == nil {
		return "", false
	}
	m := p.re.FindStringSubmatchIndex(s)
	switch {
	case m == nil:
		return "", false
	case len(m) >= 4 && p.isWord():
		return s[m[2]:m[3]], true
	}
	return s[m[0]:m[1]], true
}

func (p Pattern) isWord() bool { return !slashed.MatchString(p.src) }

// IsZero reports whether p is the zero Pattern, which ParsePattern never returns.
func (p Pattern) IsZero() bool { return p.re == nil }

// String is the pattern as reasons show it: a word quoted, a regex between slashes.
func (p Pattern) String() string {
	if p.isWord() {
		return strconv.Quote(p.src)
	}
	return p.src
}

// MarshalText returns the pattern as written in the policy.
func (p Pattern) MarshalText() ([]byte, error) { return []byte(p.src), nil }

// UnmarshalText reads a pattern as ParsePattern does.
func (p *Pattern) UnmarshalText(b []byte) error {
	v, err := ParsePattern(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// QuietHours is a daily span, From to To after midnight; a To before From spans
// midnight. The zero QuietHours is no span at all.
type QuietHours struct {
	From, To time.Duration
}

var clockSpan = regexp.MustCompile(`^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$`)

// ParseQuietHours reads a span written "22:00-07:00" (24-hour clock). It returns an
// error for any other form and for a span that starts where it ends.
func ParseQuietHours(s string) (QuietHours, error) {
	m := clockSpan.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return QuietHours{}, errors.New("write it like 22:00-07:00")
	}
	at := func(h, min string) time.Duration {
		hh, _ := strconv.Atoi(h)
		mm, _ := strconv.Atoi(min)
		return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute
	}
	q := QuietHours{From: at(m[1], m[2]), To: at(m[3], m[4])}
	if q.From == q.To {
		return QuietHours{}, errors.New("the span starts where it ends")
	}
	return q, nil
}

// IsZero reports whether q is no span.
func (q QuietHours) IsZero() bool { return q.From == q.To }

// Contains reports whether the clock time of t (in t's location) is in the span.
func (q QuietHours) Contains(t time.Time) bool {
	h, m, s := t.Clock()
	at := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second
	if q.From < q.To {
		return at >= q.From && at < q.To
	}
	return at >= q.From || at < q.To
}

// String is the span as written in the policy, "" for the zero QuietHours.
func (q QuietHours) String() string {
	if q.IsZero() {
		return ""
	}
	clock := func(d time.Duration) string {
		return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60)
	}
	return clock(q.From) + "-" + clock(q.To)
}

// MarshalText returns the span as written in the policy.
func (q QuietHours) MarshalText() ([]byte, error) { return []byte(q.String()), nil }

// UnmarshalText reads a span as ParseQuietHours does; "" is the zero QuietHours.
func (q *QuietHours) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*q = QuietHours{}
		return nil
	}
	v, err := ParseQuietHours(string(b))
	if err != nil {
		return err
	}
	*q = v
	return nil
}

// Timezone is an IANA time zone such as Europe/Berlin. The zero Timezone is UTC.
type Timezone struct {
	loc *time.Location
}

// LoadTimezone finds a zone by its IANA name. It returns an error for an unknown name
// and for "Local", which would depend on the machine.
func LoadTimezone(name string) (Timezone, error) {
	if name == "" || name == "Local" {
		return Timezone{}, fmt.Errorf("unknown time zone %q", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return Timezone{}, fmt.Errorf("unknown time zone %q", name)
	}
	return Timezone{loc: loc}, nil
}

// Location is the zone as a *time.Location; UTC for the zero Timezone.
func (z Timezone) Location() *time.Location {
	if z.loc == nil {
		return time.UTC
	}
	return z.loc
}

// String is the zone's name; "UTC" for the zero Timezone.
func (z Timezone) String() string { return z.Location().String() }

// IsZero reports whether the zone was left unset.
func (z Timezone) IsZero() bool { return z.loc == nil }

// MarshalText returns the zone's name, "" when unset.
func (z Timezone) MarshalText() ([]byte, error) {
	if z.loc == nil {
		return nil, nil
	}
	return []byte(z.loc.String()), nil
}

// UnmarshalText loads a zone by name; "" is the zero Timezone.
func (z *Timezone) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*z = Timezone{}
		return nil
	}
	v, err := LoadTimezone(string(b))
	if err != nil {
		return err
	}
	*z = v
	return nil
}

func (d *decoder) verify(n *yaml.Node, path string, v *Verify) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"duplicate_window": func(n *yaml.Node, f string) { d.duration(n, f, &v.DuplicateWindow) },
		"rejected_window":  func(n *yaml.Node, f string) { d.duration(n, f, &v.RejectedWindow) },
		"max_length":       func(n *yaml.Node, f string) { d.int(n, f, &v.MaxLength) },
		"links": func(n *yaml.Node, f string) {
			d.mapping(n, f, map[string]func(*yaml.Node, string){
				"allow_domains": func(n *yaml.Node, f string) { v.Links.AllowDomains = d.list(n, f) },
				"deny_domains":  func(n *yaml.Node, f string) { v.Links.DenyDomains = d.list(n, f) },
			})
		},
		"rules":       func(n *yaml.Node, f string) { v.Rules = d.rules(n, f) },
		"model_check": func(n *yaml.Node, f string) { v.ModelCheck = d.list(n, f) },
	})
}

func (d *decoder) rules(n *yaml.Node, path string) []Rule {
	return sequence(d, n, path, "rules", d.rule)
}

func (d *decoder) rule(n *yaml.Node, path string) Rule {
	var r Rule
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"tool":       func(n *yaml.Node, f string) { r.Tool = d.string(n, f) },
		"target":     func(n *yaml.Node, f string) { r.Target = d.string(n, f) },
		"require":    func(n *yaml.Node, f string) { r.Require = d.patterns(n, f) },
		"forbid":     func(n *yaml.Node, f string) { r.Forbid = d.patterns(n, f) },
		"max_length": func(n *yaml.Node, f string) { d.int(n, f, &r.MaxLength) },
		"hashtag":    func(n *yaml.Node, f string) { r.Hashtag = d.string(n, f) },
		"quiet_hours": func(n *yaml.Node, f string) {
			s := d.string(n, f)
			q, err := ParseQuietHours(s)
			if err != nil && n.Kind == yaml.ScalarNode {
				d.errorf(n, f, "bad quiet hours %q: %v", s, err)
			}
			r.QuietHours = q
		},
		"timezone": func(n *yaml.Node, f string) {
			s := d.string(n, f)
			z, err := LoadTimezone(s)
			if err != nil && n.Kind == yaml.ScalarNode {
				d.errorf(n, f, "%v: write it like Europe/Berlin or UTC", err)
			}
			r.Timezone = z
		},
		"reason": func(n *yaml.Node, f string) { r.Reason = d.string(n, f) },
	})
	return r
}

func (d *decoder) patterns(n *yaml.Node, field string) []Pattern {
	return sequence(d, n, field, "words or /regex/", func(item *yaml.Node, f string) Pattern {
		s := d.string(item, f)
		p, err := ParsePattern(s)
		if err != nil && item.Kind == yaml.ScalarNode {
			d.errorf(item, f, "bad pattern %q: %v", s, err)
		}
		return p // a bad item stays, as the zero Pattern, to keep the indexes
	})
}

// list is strings, keeping empty items and each item's line for validate to name.
func (d *decoder) list(n *yaml.Node, field string) []string {
	return sequence(d, n, field, "strings", d.string) // "" for a bad item keeps the indexes
}

type addFunc = func(field, format string, args ...any)

// validate checks the verify section against itself and the declared tools. unread
// reports a field whose value the file gave but could not be read (never, for a
// Policy built in code), so that it is not reported a second time as missing.
func (v *Verify) validate(tools map[string]Tool, unread func(field string) bool, add addFunc) {
	if v.DuplicateWindow < 0 {
		add("verify.duplicate_window", "must not be negative, got %s", v.DuplicateWindow)
	}
	if v.RejectedWindow < 0 {
		add("verify.rejected_window", "must not be negative, got %s", v.RejectedWindow)
	}
	if v.MaxLength < 0 {
		add("verify.max_length", "must not be negative, got %d", v.MaxLength)
	}
	validateDomains("verify.links.allow_domains", v.Links.AllowDomains, add)
	validateDomains("verify.links.deny_domains", v.Links.DenyDomains, add)
	for i, r := range v.Rules {
		field := fmt.Sprintf("verify.rules[%d]", i)
		r.validate(field, tools, func(key string) bool { return unread(field + "." + key) }, add)
	}
	for i, name := range v.ModelCheck {
		if _, ok := tools[name]; !ok {
			add(fmt.Sprintf("verify.model_check[%d]", i), "missing tool: %q is not declared under tools", name)
		}
	}
}

var domainName = regexp.MustCompile(`^([\pL\pN]([\pL\pN-]*[\pL\pN])?\.)+[\pL\pN]([\pL\pN-]*[\pL\pN])?$`)

func validateDomains(field string, domains []string, add addFunc) {
	for i, dom := range domains {
		if !domainName.MatchString(dom) || dom != strings.ToLower(dom) {
			add(fmt.Sprintf("%s[%d]", field, i), "want a lower-case domain like news.example.org, got %q", dom)
		}
	}
}

var hashtag = regexp.MustCompile(`^#[\pL\pN_]+$`)

// validate checks the rule. A rule is judged by its values, as the snapshot a task
// stores will be: a key given with nothing in it ("require: []", "max_length: 0")
// checks nothing. Only a key whose value could not be read (unread) counts as a
// check, since its own error is reported already.
func (r Rule) validate(field string, tools map[string]Tool, unread func(key string) bool, add addFunc) {
	if r.Tool != "" {
		t, ok := tools[r.Tool]
		switch {
		case !ok:
			add(field+".tool", "missing tool: %q is not declared under tools", r.Tool)
		case t.SideEffect != SideEffectCommitted:
			add(field+".tool", "%q commits nothing: rules check commits", r.Tool)
		}
	}
	if _, err := NormalizeTarget(r.Target); r.Target != "" && err != nil {
		add(field+".target", "want a chat id or @username, got %q", r.Target)
	}
	for key, ps := range map[string][]Pattern{"require": r.Require, "forbid": r.Forbid} {
		for i, p := range ps {
			if p.IsZero() {
				add(fmt.Sprintf("%s.%s[%d]", field, key, i), "empty pattern")
			}
		}
	}
	if r.MaxLength < 0 {
		add(field+".max_length", "must not be negative, got %d", r.MaxLength)
	}
	if r.Hashtag != "" && !hashtag.MatchString(r.Hashtag) {
		add(field+".hashtag", "want a hashtag like #digest, got %q", r.Hashtag)
	}
	quiet := !r.QuietHours.IsZero() || unread("quiet_hours")
	if !r.Timezone.IsZero() && !quiet {
		add(field+".timezone", "only means something with quiet_hours")
	}
	if len(r.Require)+len(r.Forbid) == 0 && r.MaxLength <= 0 && r.Hashtag == "" && !quiet &&
		!unread("require") && !unread("forbid") && !unread("max_length") && !unread("hashtag") {
		add(field, "checks nothing: give require, forbid, max_length, hashtag or quiet_hours")
	}
}
