package verifier

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/countersign/countersign/policy"
)

// rules checks the policy's rules that cover the payload's tool and target against
// the text as Telegram shows it. Each problem carries its rule's reason.
func (c Checker) rules(_ context.Context, p *payload) []finding {
	now := c.clock()
	var fs []finding
	for _, r := range c.cfg.Rules {
		if !r.Applies(p.in.Tool, p.in.Target) {
			continue
		}
		for _, problem := range ruleProblems(r, p, now) {
			if r.Reason != "" {
				problem += " — " + r.Reason
			}
			fs = append(fs, repairf("%s", problem))
		}
	}
	return fs
}

func ruleProblems(r policy.Rule, p *payload, now time.Time) []string {
	var problems []string
	for _, pat := range r.Require {
		if _, ok := pat.Find(p.visible); !ok {
			problems = append(problems, "missing required "+pat.String())
		}
	}
	for _, pat := range r.Forbid {
		if m, ok := pat.Find(p.visible); ok {
			problems = append(problems, fmt.Sprintf("contains forbidden %s (found %q)", pat, m))
		}
	}
	if n := p.length(); r.MaxLength > 0 && n > r.MaxLength {
		problems = append(problems, fmt.Sprintf("text is %d characters long, max_length is %d", n, r.MaxLength))
	}
	if r.Hashtag != "" && !hasHashtag(p.visible, r.Hashtag) {
		problems = append(problems, "missing hashtag "+r.Hashtag)
	}
	if r.InQuietHours(now) {
		problems = append(problems, fmt.Sprintf("quiet hours %s (%s)", r.QuietHours, r.Timezone))
	}
	return problems
}

// hasHashtag reports whether tag stands in text as a hashtag of its own, in any case:
// "#digest" is in "news #Digest." but not in "#digests" or "a#digest".
func hasHashtag(text, tag string) bool {
	re := regexp.MustCompile(`(?i)(?:^|[^\pL\pN_])` + regexp.QuoteMeta(tag) + `(?:$|[^\pL\pN_])`)
	return re.MatchString(text)
}
