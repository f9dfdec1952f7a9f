package tools_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// TestEveryCommitToolTakesWhatChanged: the "changed" argument is in the schema
// of every commit tool, as models and MCP clients read it, and in none that
// only prepares; it counts in a call's fingerprint, so that a call with it is
// not the call that was rejected.
func TestEveryCommitToolTakesWhatChanged(t *testing.T) {
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"commit_send_poll", "commit_forward_message", "commit_copy_message", "commit_send_photo", "commit_send_album",
		"commit_send_document", "commit_edit_message", "commit_delete_message", "commit_pin_message", "commit_unpin_message"} {
		p.Tools[n] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	}
	r, err := tools.NewRegistry(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	commits := 0
	for _, name := range r.Names() {
		tool, _ := r.Get(name)
		_, commit := tool.(tools.Committer)
		_, takes := tool.Params().Properties[policy.ChangedArg]
		if commit != takes {
			t.Errorf("%s: commits %v, takes %q %v", name, commit, policy.ChangedArg, takes)
		}
		if commit {
			commits++
		}
	}
	if commits < 12 {
		t.Errorf("%d commit tools checked, want every one of the project's", commits)
	}
	send, _ := r.Get("commit_send_message")
	plain := json.RawMessage(`{"chat_id": "222", "text": "hi"}`)
	if tools.Fingerprint(send, plain) == tools.Fingerprint(send, json.RawMessage(`{"chat_id": "222", "text": "hi", "changed": "asked again"}`)) {
		t.Error("a stated change does not change the call's fingerprint")
	}
}

func TestStatedChange(t *testing.T) {
	for _, tt := range []struct {
		raw, want string
		refused   bool
	}{
		{`{"text": "hi"}`, "", false},
		{`{"text": "hi", "changed": null}`, "", false},
		{`{"text": "hi", "changed": "  the date moved  "}`, "the date moved", false},
		{`{"text": "hi", "changed": 5}`, "", true},
		{`{"text": "hi", "changed": "token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"}`, "", true},
	} {
		got, err := tools.StatedChange("commit_send_message", json.RawMessage(tt.raw))
		var ae *tools.ArgsError
		if got != tt.want || errors.As(err, &ae) != tt.refused || (err != nil) != tt.refused {
			t.Errorf("StatedChange(%s) = %q, %v; want %q, refused %v", tt.raw, got, err, tt.want, tt.refused)
		}
	}
}
