package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// TestNormalizeTargetAliases: Telegram reads a chat id as an integer and usernames
// without regard to case, so each group below is one chat, written one way.
func TestNormalizeTargetAliases(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"chat id", "222", "222"},
		{"plus sign", "+222", "222"},
		{"leading zero", "0222", "222"},
		{"spaces around", " 222\t", "222"},
		{"channel id stays negative", "-1001234567890", "-1001234567890"},
		{"negative with a leading zero", "-01001234567890", "-1001234567890"},
		{"largest id", "9223372036854775807", "9223372036854775807"},
		{"username", "@news_desk", "@news_desk"},
		{"username in another case", "@News_Desk", "@news_desk"},
		{"username in capitals", "@NEWS_DESK", "@news_desk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policy.NormalizeTarget(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("NormalizeTarget(%q) = %q, %v; want %q, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNormalizeTargetRejectsNonsense(t *testing.T) {
	for _, in := range []string{"", " ", "0", "-0", "news_desk", "@news", "@1news_desk", "@news desk", "12a", "0x10",
		"1_000", "++222", "9223372036854775808", "https://t.me/news_desk", "@news_desk_channel_for_the_whole_team"} {
		got, err := policy.NormalizeTarget(in)
		if !errors.Is(err, policy.ErrInvalidTarget) || got != "" {
			t.Errorf("NormalizeTarget(%q) = %q, %v; want ErrInvalidTarget", in, got, err)
		}
	}
}

const aliasPolicy = `auto_approve:
  - tool: commit_send_message
    chats: ["0222", "@News_Desk", "+333"]
verify:
  rules:
    - target: "@NEWS_DESK"
      forbid: [x]
    - target: "+222"
      forbid: [y]
`

func TestPolicyTargetsAreNormalised(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal + aliasPolicy))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(p.AutoApprove[0].Chats, ","), "222,@news_desk,333"; got != want {
		t.Errorf("auto_approve chats = %s, want %s", got, want)
	}
	if got, want := p.Verify.Rules[0].Target+","+p.Verify.Rules[1].Target, "@news_desk,222"; got != want {
		t.Errorf("rule targets = %s, want %s", got, want)
	}
	for _, target := range []string{"222", "+222", "0222", "@news_desk", "@News_Desk", "333"} {
		if p.NeedsApproval("commit_send_message", target) {
			t.Errorf("NeedsApproval(commit_send_message, %s) = true, want false: auto_approve names it", target)
		}
	}
	if !p.NeedsApproval("commit_send_message", "2222") {
		t.Error("NeedsApproval(commit_send_message, 2222) = false, want true")
	}
	tests := []struct {
		rule   int
		target string
		want   bool
	}{
		{0, "@news_desk", true},
		{0, "@News_Desk", true},
		{0, "@news_desk2", false},
		{1, "222", true},
		{1, "0222", true},
		{1, "-222", false},
	}
	for _, tt := range tests {
		if got := p.Verify.Rules[tt.rule].Applies("commit_send_message", tt.target); got != tt.want {
			t.Errorf("rule %d Applies(commit_send_message, %s) = %v, want %v", tt.rule, tt.target, got, tt.want)
		}
	}
}

// TestPolicyTargetsBuiltInCode: a policy built in code, or kept as JSON with a task
// from before targets were normalised, meets aliases the same way.
func TestPolicyTargetsBuiltInCode(t *testing.T) {
	p := policy.Policy{
		Tools:       map[string]policy.Tool{"commit_send_message": {SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}},
		AutoApprove: []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"+222"}}},
	}
	if p.NeedsApproval("commit_send_message", "222") {
		t.Error("NeedsApproval(commit_send_message, 222) under chats [+222] = true, want false")
	}
	r := policy.Rule{Target: "0222"}
	if !r.Applies("commit_send_message", "222") {
		t.Error("rule for 0222 Applies(commit_send_message, 222) = false, want true")
	}
}

func TestPolicyTargetErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"auto_approve chat", "auto_approve:\n  - tool: commit_send_message\n    chats: [\"222\", news desk]\n",
			`line 10: auto_approve[0].chats[1]: want a chat id or @username, got "news desk"`},
		{"auto_approve chat zero", "auto_approve:\n  - tool: commit_send_message\n    chats:\n      - \"0\"\n",
			`line 11: auto_approve[0].chats[0]: want a chat id or @username, got "0"`},
		{"rule target", "verify:\n  rules:\n    - target: \"@abc\"\n      forbid: [x]\n",
			`line 10: verify.rules[0].target: want a chat id or @username, got "@abc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			var errs policy.Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("Parse error = %v, want one policy error", err)
			}
			if got := errs[0].Error(); !strings.HasPrefix(got, tt.want) {
				t.Errorf("error = %q, want prefix %q", got, tt.want)
			}
		})
	}
}
