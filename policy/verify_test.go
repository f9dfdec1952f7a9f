package policy_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

func TestVerifyDefaults(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	v := p.Verify
	if v.DuplicateWindow != policy.DefaultDuplicateWindow || v.MaxLength != 0 || v.Rules != nil || v.ModelCheck != nil ||
		v.Links.AllowDomains != nil || v.Links.DenyDomains != nil {
		t.Errorf("unset verify = %+v, want a 24h window and nothing else", v)
	}
	p, err = policy.Parse(strings.NewReader(minimal + "verify:\n  duplicate_window: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Verify.DuplicateWindow != 0 {
		t.Errorf("explicit 0s window = %s, want 0s", p.Verify.DuplicateWindow)
	}
}

const verifySection = `verify:
  duplicate_window: 12h
  max_length: 4096
  links:
    allow_domains: [news.org]
    deny_domains: [ads.news.org]
  rules:
    - tool: commit_send_message
      target: "@news_desk"
      require: ["#digest"]
      forbid: ["/\\bguarantee(d)?\\b/i"]
      max_length: 1000
      hashtag: "#digest"
      quiet_hours: "22:00-07:00"
      timezone: Europe/Berlin
      reason: channel posts follow the style guide
  model_check: [commit_send_message]
`

func TestVerifySection(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal + verifySection))
	if err != nil {
		t.Fatal(err)
	}
	checkVerifySection(t, p.Verify)

	// The journal keeps the policy as JSON: the section must survive the round trip.
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back policy.Policy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	checkVerifySection(t, back.Verify)
}

func checkVerifySection(t *testing.T, v policy.Verify) {
	t.Helper()
	if v.DuplicateWindow != 12*time.Hour || v.MaxLength != 4096 || len(v.Rules) != 1 ||
		strings.Join(v.Links.AllowDomains, ",") != "news.org" || strings.Join(v.Links.DenyDomains, ",") != "ads.news.org" ||
		strings.Join(v.ModelCheck, ",") != "commit_send_message" {
		t.Fatalf("verify = %+v", v)
	}
	r := v.Rules[0]
	if r.Tool != "commit_send_message" || r.Target != "@news_desk" || r.MaxLength != 1000 || r.Hashtag != "#digest" ||
		r.Reason != "channel posts follow the style guide" {
		t.Errorf("rule = %+v", r)
	}
	if got := r.Require[0].String() + " " + r.Forbid[0].String(); got != `"#digest" /\bguarantee(d)?\b/i` {
		t.Errorf("patterns = %s", got)
	}
	if m, ok := r.Forbid[0].Find("It is GUARANTEED."); !ok || m != "GUARANTEED" {
		t.Errorf("forbid Find = %q %v, want GUARANTEED", m, ok)
	}
	if r.QuietHours.String() != "22:00-07:00" || r.Timezone.String() != "Europe/Berlin" {
		t.Errorf("quiet hours = %s (%s)", r.QuietHours, r.Timezone)
	}
	// 21:30 UTC in winter is 22:30 in Berlin.
	if !r.InQuietHours(time.Date(2026, 1, 5, 21, 30, 0, 0, time.UTC)) || r.InQuietHours(time.Date(2026, 1, 5, 20, 30, 0, 0, time.UTC)) {
		t.Error("InQuietHours does not read the clock in Europe/Berlin")
	}
}

func TestVerifyErrorsNameFieldAndLine(t *testing.T) {
	const checksNothing = "line 10: verify.rules[0]: checks nothing"
	tests := []struct {
		name, extra string
		want        []string // "line N: field: ..." prefixes, every error in order
	}{
		{"unknown key", "verify:\n  duplicate_windw: 1h\n", []string{"line 9: verify.duplicate_windw: unknown key"}},
		{"unknown links key", "verify:\n  links:\n    allow: []\n", []string{"line 10: verify.links.allow: unknown key"}},
		{"unknown rule key", "verify:\n  rules:\n    - requires: [x]\n", []string{checksNothing, "line 10: verify.rules[0].requires: unknown key"}},
		{"bad duration", "verify:\n  duplicate_window: 1 day\n", []string{`line 9: verify.duplicate_window: bad duration "1 day"`}},
		{"negative window", "verify:\n  duplicate_window: -1h\n", []string{"line 9: verify.duplicate_window: must not be negative"}},
		{"negative length", "verify:\n  max_length: -1\n", []string{"line 9: verify.max_length: must not be negative"}},
		{"bad regex", "verify:\n  rules:\n    - forbid: [\"/(/\"]\n",
			[]string{`line 10: verify.rules[0].forbid[0]: bad pattern "/(/": bad regular expression: error parsing regexp: missing closing )`}},
		{"bad flag", "verify:\n  rules:\n    - require: [ok, \"/x/g\"]\n",
			[]string{`line 10: verify.rules[0].require[1]: bad pattern "/x/g": unknown flag "g": use i, m or s`}},
		{"empty word", "verify:\n  rules:\n    - require: [\" \"]\n", []string{`line 10: verify.rules[0].require[0]: bad pattern " ": empty pattern`}},
		{"patterns not a list", "verify:\n  rules:\n    - require: \"#digest\"\n",
			[]string{`line 10: verify.rules[0].require: want a list of words or /regex/, got "#digest"`}},
		{"bad quiet hours", "verify:\n  rules:\n    - quiet_hours: 22-7\n",
			[]string{`line 10: verify.rules[0].quiet_hours: bad quiet hours "22-7": write it like 22:00-07:00`}},
		{"hour 25", "verify:\n  rules:\n    - quiet_hours: \"25:00-07:00\"\n      timezone: UTC\n",
			[]string{`line 10: verify.rules[0].quiet_hours: bad quiet hours "25:00-07:00": write it like 22:00-07:00`}},
		{"empty span", "verify:\n  rules:\n    - quiet_hours: \"07:00-07:00\"\n",
			[]string{`line 10: verify.rules[0].quiet_hours: bad quiet hours "07:00-07:00": the span starts where it ends`}},
		{"bad timezone", "verify:\n  rules:\n    - quiet_hours: \"22:00-07:00\"\n      timezone: Mars/Olympus\n",
			[]string{`line 11: verify.rules[0].timezone: unknown time zone "Mars/Olympus": write it like Europe/Berlin or UTC`}},
		{"Local timezone", "verify:\n  rules:\n    - quiet_hours: \"22:00-07:00\"\n      timezone: Local\n",
			[]string{`line 11: verify.rules[0].timezone: unknown time zone "Local"`}},
		{"timezone alone", "verify:\n  rules:\n    - forbid: [x]\n      timezone: UTC\n",
			[]string{"line 11: verify.rules[0].timezone: only means something with quiet_hours"}},
		{"undeclared tool", "verify:\n  rules:\n    - tool: commit_publish_post\n      forbid: [x]\n",
			[]string{`line 10: verify.rules[0].tool: missing tool: "commit_publish_post" is not declared under tools`}},
		{"prepare tool", "verify:\n  rules:\n    - tool: prepare_reply\n      forbid: [x]\n",
			[]string{`line 10: verify.rules[0].tool: "prepare_reply" commits nothing`}},
		{"bad target", "verify:\n  rules:\n    - target: my_channel\n      forbid: [x]\n",
			[]string{`line 10: verify.rules[0].target: want a chat id or @username, got "my_channel"`}},
		{"bad hashtag", "verify:\n  rules:\n    - hashtag: digest\n", []string{`line 10: verify.rules[0].hashtag: want a hashtag like #digest, got "digest"`}},
		{"checks nothing", "verify:\n  rules:\n    - target: \"@news_desk\"\n      reason: why\n", []string{checksNothing}},
		{"checks nothing with empty keys", "verify:\n  rules:\n    - require: []\n      max_length: 0\n      hashtag: \"\"\n", []string{checksNothing}},
		{"rules not a list", "verify:\n  rules: {}\n", []string{"line 9: verify.rules: want a list of rules, got a mapping"}},
		{"bad domain", "verify:\n  links:\n    deny_domains: [ads.org, \"https://news.org\"]\n",
			[]string{`line 10: verify.links.deny_domains[1]: want a lower-case domain like news.example.org, got "https://news.org"`}},
		{"upper-case domain", "verify:\n  links:\n    allow_domains:\n      - News.org\n",
			[]string{`line 11: verify.links.allow_domains[0]: want a lower-case domain`}},
		{"model_check tool", "verify:\n  model_check: [commit_x]\n",
			[]string{`line 9: verify.model_check[0]: missing tool: "commit_x" is not declared under tools`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			var errs policy.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse error = %v, want policy.Errors", err)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("errors =\n%v\nwant %d: %q", errs, len(tt.want), tt.want)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("error %d = %q, want prefix %q", i, errs[i].Error(), want)
				}
			}
		})
	}
}

func TestPattern(t *testing.T) {
	tests := []struct {
		pattern, text, want string
		ok                  bool
	}{
		{"free", "Free! Now.", "Free", true},
		{"free", "freedom", "", false},
		{"#digest", "news #Digest.", "#Digest", true},
		{"#digest", "#digests", "", false},
		{"/start", "type /start now", "/start", true},
		{"/\\d{4}/", "in 2026", "2026", true},
		{"/abc/i", "xABCx", "ABC", true},
		{"/^a.b$/ms", "x\na\nb", "a\nb", true},
	}
	for _, tt := range tests {
		p, err := policy.ParsePattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pattern, err)
		}
		if got, ok := p.Find(tt.text); got != tt.want || ok != tt.ok {
			t.Errorf("%s.Find(%q) = %q %v, want %q %v", p, tt.text, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := (policy.Pattern{}).Find("anything"); ok {
		t.Error("the zero Pattern matched")
	}
}

func TestQuietHoursContains(t *testing.T) {
	tests := []struct {
		span  string
		clock string
		want  bool
	}{
		{"22:00-07:00", "21:59", false},
		{"22:00-07:00", "22:00", true},
		{"22:00-07:00", "03:00", true},
		{"22:00-07:00", "06:59", true},
		{"22:00-07:00", "07:00", false},
		{"09:00-17:30", "08:59", false},
		{"09:00-17:30", "09:00", true},
		{"09:00-17:30", "17:29", true},
		{"09:00-17:30", "17:30", false},
	}
	for _, tt := range tests {
		q, err := policy.ParseQuietHours(tt.span)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := time.Parse("15:04", tt.clock)
		if got := q.Contains(at); got != tt.want {
			t.Errorf("%s contains %s = %v, want %v", tt.span, tt.clock, got, tt.want)
		}
	}
}
