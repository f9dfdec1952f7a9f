package verifier_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

const rulesPolicy = `
tools:
  commit_send_message:
    side_effect: committed
    approval: required
  commit_publish_post:
    side_effect: committed
    approval: required
  prepare_reply:
    side_effect: none
verify:
  rules:
    - tool: commit_publish_post
      target: "@news_desk"
      require: ["#digest", "/\\d{4}/"]
      forbid: ["guarantee", "/\\bfree(bie)?s?\\b/i"]
      max_length: 60
      hashtag: "#weekly"
      reason: channel posts follow the style guide
    - target: "@night_desk"
      quiet_hours: "22:00-07:00"
      timezone: Pacific/Auckland
    - target: "@day_desk"
      quiet_hours: "22:00-07:00"
    - target: "@lunch_desk"
      quiet_hours: "11:30-12:30"
`

func TestRules(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(rulesPolicy))
	if err != nil {
		t.Fatal(err)
	}
	post := func(s string) verifier.Input {
		return with(func(in *verifier.Input) { in.Tool, in.Text = "commit_publish_post", s })
	}
	to := func(tool, target string) verifier.Input {
		return with(func(in *verifier.Input) { in.Tool, in.Target = tool, target })
	}
	const why = " — channel posts follow the style guide"
	runCases(t, verifier.New(p.Verify, nil, clock), []verdictCase{
		{"follows every rule", post("#digest 2026 #Weekly roundup"), verifier.Pass, nil},
		{"other tool", with(func(in *verifier.Input) { in.Text = "no tags" }), verifier.Pass, nil},
		{"target in any case", with(func(in *verifier.Input) {
			in.Tool, in.Target, in.Text = "commit_publish_post", "@NEWS_DESK", "#digest 2026 #weekly"
		}), verifier.Pass, nil},
		{"missing word", post("#digestive 2026 #weekly"), verifier.Repair, []string{`rules: missing required "#digest"` + why}},
		{"missing regex", post("#digest #weekly"), verifier.Repair, []string{`rules: missing required /\d{4}/` + why}},
		{"forbidden word", post("#digest 2026 #weekly: Guarantee!"), verifier.Repair,
			[]string{`rules: contains forbidden "guarantee" (found "Guarantee")` + why}},
		{"word is whole", post("#digest 2026 #weekly: guaranteed"), verifier.Pass, nil},
		{"forbidden regex", post("#digest 2026 #weekly FREEBIES"), verifier.Repair,
			[]string{`rules: contains forbidden /\bfree(bie)?s?\b/i (found "FREEBIES")` + why}},
		{"too long", post("#digest 2026 #weekly " + strings.Repeat("a", 40)), verifier.Repair,
			[]string{"rules: text is 61 characters long, max_length is 60" + why}},
		{"missing hashtag", post("#digest 2026 #weeklyish"), verifier.Repair, []string{"rules: missing hashtag #weekly" + why}},
		{"every problem", post("free"), verifier.Repair, []string{
			`rules: missing required "#digest"` + why,
			`rules: missing required /\d{4}/` + why,
			`rules: contains forbidden /\bfree(bie)?s?\b/i (found "free")` + why,
			"rules: missing hashtag #weekly" + why,
		}},
		{"quiet hours in a zone", to("commit_send_message", "@night_desk"), verifier.Repair,
			[]string{"rules: quiet hours 22:00-07:00 (Pacific/Auckland)"}},
		{"not quiet in UTC", to("commit_send_message", "@day_desk"), verifier.Pass, nil},
		{"quiet at noon", to("commit_send_message", "@lunch_desk"), verifier.Repair, []string{"rules: quiet hours 11:30-12:30 (UTC)"}},
		{"prepare is no commit", to("prepare_reply", "@night_desk"), verifier.Pass, nil},
	})
}
