package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// A YAML syntax error names the line the problem is on, as an editor counts
// lines, not the line where yaml.v3 says the construct around it began.
func TestASyntaxErrorNamesItsLine(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		problem   string
	}{
		{"a key indented one space too few", "tools:\n  prepare_reply:\n    side_effect: none\n  commit_send_message:\n    side_effect: committed\n   approval: required\n",
			6, "did not find expected key"},
		{"an unclosed flow sequence", "tools:\n  prepare_reply:\n    side_effect: none\n  bad: [unclosed\n", 4, "did not find expected ',' or ']'"},
		{"a tab for indentation", "tools:\n\tprepare_reply: x\n", 2, "found character that cannot start any token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(tt.src))
			var es policy.Errors
			if !errors.As(err, &es) || len(es) != 1 || es[0].Line != tt.line || !strings.Contains(es[0].Msg, tt.problem) ||
				strings.Contains(es[0].Msg, "line ") {
				t.Errorf("Parse = %v; want line %d: %s, and no other line", err, tt.line, tt.problem)
			}
		})
	}
	if _, err := policy.Parse(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty policy: %v, want it called empty", err)
	}
}
