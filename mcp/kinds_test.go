package mcp_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/policy"
)

// Every kind of action is offered with its own arguments' schema, and hints
// from its class: a state-setting commit changes what is there and repeats
// harmlessly (destructive, idempotent), an additive one adds (neither).
func TestEveryKindIsOfferedWithItsClassesHints(t *testing.T) {
	t.Parallel()
	kinds := map[string]struct {
		sets     bool
		required []string
	}{
		"commit_send_photo":      {false, []string{"chat_id", "file"}},
		"commit_send_album":      {false, []string{"chat_id", "files"}},
		"commit_send_poll":       {false, []string{"chat_id", "question", "options"}},
		"commit_forward_message": {false, []string{"chat_id"}},
		"commit_edit_message":    {true, []string{"text"}},
		"commit_delete_message":  {true, nil},
		"commit_pin_message":     {false, nil}, // state-setting, narrowed to additive below
	}
	r := newRig(t, func(p *policy.Policy) {
		for name := range kinds {
			p.Tools[name] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		}
		p.Tools["commit_pin_message"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired, Idempotency: policy.Additive}
	})
	cs := r.connect(t, transports[0], nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range res.Tools {
		want, ok := kinds[tool.Name]
		if !ok {
			continue
		}
		seen++
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || *a.DestructiveHint != want.sets || a.IdempotentHint != want.sets || a.ReadOnlyHint {
			t.Errorf("%s annotations %+v, want destructive and idempotent %v", tool.Name, a, want.sets)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		var required []string
		list, _ := schema["required"].([]any)
		for _, r := range list {
			required = append(required, r.(string))
		}
		if len(required) != len(want.required) {
			t.Errorf("%s requires %v, want %v", tool.Name, required, want.required)
		}
	}
	if seen != len(kinds) {
		t.Errorf("%d of the %d kinds offered", seen, len(kinds))
	}
}
