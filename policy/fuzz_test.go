package policy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// FuzzParse: no file makes Parse panic; a refusal is a list of errors that each
// name a field; a policy that parses passes Validate, and survives the JSON
// snapshot a task stores (journal.CreateTask): it marshals, reads back, still
// validates, and marshals to the same bytes, so a task runs under the policy that
// was in force when it started.
func FuzzParse(f *testing.F) {
	def, err := os.ReadFile("../policies.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(def)
	for _, extra := range []string{
		"", "retry_budget: 0\nwait_budget: 0s\nloop_guard: false\n",
		"loop_guard: {failures: 3, ping_pong: 0}\n",
		"backoff: {base: 2s, cap: 1m, jitter: 0}\n",
		"access: {operators: [1, \"2\"], approvers: [3]}\n",
		"auto_approve:\n  - tool: commit_send_message\n    chats: [\"+222\", \"@News_Desk\", \"-100123\"]\n",
		"verify:\n  duplicate_window: 0s\n  max_length: 4096\n  links: {allow_domains: [news.org], deny_domains: [evil.net]}\n" +
			"  rules:\n    - target: \"@News_Desk\"\n      require: [free, \"/^\\\\d+$/im\"]\n      forbid: [\"#x\"]\n      hashtag: \"#digest\"\n" +
			"      quiet_hours: \"22:00-07:00\"\n      timezone: Europe/Berlin\n      reason: why\n  model_check: [commit_send_message]\n",
		"model: {enabled: false, name: a, fallback: b, backoff: {jitter: 0.5}, stall_warning: 1s, stall_abort: 2s}\n",
		"retry_budget: !!int 1_0\n",
		httpTool, "tools: {}\n", "---\n", "[]\n", "tools:\n  ? [a]\n  : x\n",
	} {
		f.Add([]byte(minimal + extra))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		p, err := policy.Parse(bytes.NewReader(file))
		if err != nil {
			var errs policy.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error %v is not a list of field errors", err)
			}
			for _, e := range errs {
				if e.Field == "" || e.Msg == "" {
					t.Fatalf("Parse error %q names no field", e)
				}
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("a parsed policy does not validate: %v\n%s", err, file)
		}
		snap, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("a parsed policy cannot be snapshotted: %v\n%s", err, file)
		}
		back := new(policy.Policy)
		if err := json.Unmarshal(snap, back); err != nil {
			t.Fatalf("the snapshot does not read back: %v\n%s", err, snap)
		}
		if err := back.Validate(); err != nil {
			t.Fatalf("the snapshot read back does not validate: %v\n%s", err, snap)
		}
		again, err := json.Marshal(back)
		if err != nil || !bytes.Equal(again, snap) {
			t.Fatalf("the snapshot changes when read back (%v):\n%s\n%s", err, snap, again)
		}
		for _, name := range p.ToolNames() {
			if !strings.HasPrefix(name, "prepare_") && !strings.HasPrefix(name, "commit_") {
				t.Fatalf("tool %q parsed", name)
			}
		}
	})
}
