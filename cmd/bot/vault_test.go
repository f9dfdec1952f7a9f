package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// lostSender is a world where every send is written and never answered.
type lostSender struct{}

func (lostSender) Send(context.Context, tools.Message) (tools.Delivery, error) {
	return tools.Delivery{}, fmt.Errorf("read: connection reset: %w", tools.ErrOutcomeUnknown)
}

// unknownIn leaves one operation with an unknown outcome in the data folder.
func unknownIn(t *testing.T, data string) string {
	t.Helper()
	ctx := context.Background()
	r := rigtest.New(t, rigtest.Dir(data), rigtest.Sender(lostSender{}), rigtest.Transport("console"),
		rigtest.EditPolicy(func(p *policy.Policy) { p.Access.Approvers = []policy.UserID{1} }))
	defer r.Journal.Close() // before the commands under test open it
	op := r.Operator
	task, _ := op.StartTask(ctx, journal.Task{Requester: 1})
	res, _ := op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: []byte(`{"chat_id":"222","text":"status report"}`)})
	a, _ := op.PendingApproval(ctx, res.OperationID)
	if res, _ = op.Decide(ctx, a.ID, 1, true); res.NextAction != action.NextVerify {
		t.Fatalf("result = %+v, want verify", res)
	}
	return res.OperationID
}

func TestVaultCommands(t *testing.T) {
	data := t.TempDir()
	id := unknownIn(t, data)
	r := runMain(t, "", nil, "vault", "list", "-json", "-unresolved", "-data", data)
	var e struct{ OperationID, Status, Target, NextAction, Path string }
	var raw map[string]any
	json.Unmarshal([]byte(r.stdout), &raw)
	if err := json.Unmarshal([]byte(r.stdout), &e); r.code != 0 || err != nil || e.Status != "unknown" || raw["operation_id"] != id || raw["next_action"] != "verify-before-retry" {
		t.Fatalf("vault list -json: exit %d %q (%v)", r.code, r.stdout, err)
	}
	if r = runMain(t, "", nil, "vault", "show", "-data", data, id); r.code != 0 || !strings.Contains(r.stdout, "status: unknown") {
		t.Errorf("vault show: exit %d\n%s", r.code, r.stdout)
	}
	if r = runMain(t, "", nil, "vault", "show", "-data", data, "op-nope"); r.code != 1 {
		t.Errorf("vault show of an unknown id: exit %d, want 1", r.code)
	}
	if r = runMain(t, "", nil, "vault", "resolve", "-data", data, "-policies", "../../policies.yaml", id, "maybe"); r.code != 2 {
		t.Errorf("vault resolve with a bad answer: exit %d, want 2", r.code)
	}
	r = runMain(t, "", nil, "vault", "resolve", "-data", data, "-policies", "../../policies.yaml", "-by", "@alice", id, "not_delivered")
	if r.code != 0 {
		t.Fatalf("vault resolve: exit %d %s", r.code, r.stderr)
	}
	if r = runMain(t, "", nil, "ops", "show", "-json", "-data", data, id); !strings.Contains(r.stdout, `"state": "not_delivered"`) {
		t.Errorf("the journal did not follow the vault resolve:\n%s", r.stdout)
	}
	if r = runMain(t, "", nil, "vault", "list", "-unresolved", "-data", data); r.stdout != "no notes that match\n" {
		t.Errorf("unresolved after resolve: %q, want none", r.stdout)
	}
	if r = runMain(t, "", nil, "vault", "gc", "-data", data); r.code != 0 || r.stdout != "no notes removed: none is resolved and past its time\n" {
		t.Errorf("gc before the TTL: exit %d removed %q, want nothing", r.code, r.stdout)
	}
}

// TestVaultListTargetAliases: -target names a chat as a payload does, so +222 finds
// the envelopes of 222.
func TestVaultListTargetAliases(t *testing.T) {
	data := t.TempDir()
	id := unknownIn(t, data)
	for _, target := range []string{"222", "+222", "0222"} {
		if r := runMain(t, "", nil, "vault", "list", "-target", target, "-data", data); r.code != 0 || !strings.Contains(r.stdout, id) {
			t.Errorf("vault list -target %s: exit %d %q, want %s", target, r.code, r.stdout, id)
		}
	}
	if r := runMain(t, "", nil, "vault", "list", "-target", "news desk", "-data", data); r.code != 2 || !strings.Contains(r.stderr, `-target "news desk"`) {
		t.Errorf("vault list -target news desk: exit %d %q, want 2 naming -target", r.code, r.stderr)
	}
}

// A list with nothing in it, and a gc that removes nothing, say so rather than
// print nothing; a state that does not exist is refused with the ones that do.
func TestEmptyListsSaySoAndAStateMustExist(t *testing.T) {
	data := t.TempDir()
	if j, err := openJournal(context.Background(), Config{DataDir: data}); err != nil {
		t.Fatal(err)
	} else {
		j.Close()
	}
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"ops", "list", "-data", data}, exitOK, "no operations\n", ""},
		{[]string{"ops", "list", "-data", data, "-state", "committed"}, exitOK, "no operations in that state\n", ""},
		{[]string{"ops", "list", "-data", data, "-state", "bogus"}, exitUsage, "", `no state "bogus"; the states are approved, awaiting_approval,`},
		{[]string{"vault", "list", "-data", data}, exitOK, "no notes in the vault\n", ""},
		{[]string{"vault", "list", "-data", data, "-unresolved"}, exitOK, "no notes that match\n", ""},
		{[]string{"vault", "gc", "-data", data}, exitOK, "no notes removed: none is resolved and past its time\n", ""},
	}
	for _, tt := range tests {
		r := runMain(t, "", nil, tt.args...)
		if r.code != tt.code || r.stdout != tt.stdout || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("countersign %s: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr with %q",
				strings.Join(tt.args, " "), r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
}
