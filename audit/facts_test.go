package audit_test

import (
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/audit"
)

// TestFactsKeepTheirWireFormat: the bodies' JSON, every field set and none,
// is byte for byte what the journal wrote before these types moved here from
// it. The chain hashes each body's bytes and the genesis digest the JSON of
// the history before the trail, so a field renamed, moved, or made to omit
// its zero otherwise would leave every trail already written unverifiable.
func TestFactsKeepTheirWireFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"transition, zero", audit.TransitionFact{}, `{"transition":0,"from":"","to":"","reason":"","at":0}`},
		{"transition, full", audit.TransitionFact{Transition: 1, From: "a", To: "b", Reason: "r", At: 2, Task: "t", Tool: "tl", Surface: "s", Transport: "tr",
			PayloadSHA256: "p", Result: json.RawMessage(`{"x":1}`), Replica: "rep"},
			`{"transition":1,"from":"a","to":"b","reason":"r","at":2,"task":"t","tool":"tl","surface":"s","transport":"tr","payload_sha256":"p","result":{"x":1},"replica":"rep"}`},
		{"approval, zero", audit.ApprovalFact{}, `{"approval":""}`},
		{"approval, full", audit.ApprovalFact{Approval: "ap", PayloadSHA256: "p", Requester: 7, Created: 1, Expires: 2, Decision: audit.DecisionApproved, By: 42, At: 3,
			Required: 2, Grant: "g", StepUp: audit.PasskeyFactor},
			`{"approval":"ap","payload_sha256":"p","requester":7,"created":1,"expires":2,"decision":"approved","by":42,"at":3,"required":2,"grant":"g","step_up":"passkey"}`},
		{"vote, zero", audit.VoteFact{}, `{"approval":"","by":0,"at":0,"of":0,"required":0}`},
		{"vote, full", audit.VoteFact{Approval: "ap", By: 42, At: 1, Grant: "g", Of: 1, Required: 2, StepUp: audit.PasskeyFactor, PayloadSHA256: "p"},
			`{"approval":"ap","by":42,"at":1,"grant":"g","of":1,"required":2,"step_up":"passkey","payload_sha256":"p"}`},
		{"escalation, zero", audit.EscalationFact{}, `{"approval":"","at":0}`},
		{"escalation, full", audit.EscalationFact{Approval: "ap", At: 1}, `{"approval":"ap","at":1}`},
		{"edit, zero", audit.EditFact{}, `{"seq":0,"old_sha256":"","new_sha256":"","by":0,"at":0,"approval":""}`},
		{"edit, full", audit.EditFact{Seq: 1, Old: "o", New: "n", By: 42, At: 2, Approval: "ap"},
			`{"seq":1,"old_sha256":"o","new_sha256":"n","by":42,"at":2,"approval":"ap"}`},
		{"grant, zero", audit.GrantFact{}, `{"grant":"","by":0,"at":0}`},
		{"grant, empty items", audit.GrantFact{Items: []audit.GrantItem{}}, `{"grant":"","by":0,"at":0}`},
		{"grant, full", audit.GrantFact{Grant: "g", Kind: "window", By: 42, At: 1, Until: 2, Tool: "tl", Target: "tg", Task: "t",
			Items: []audit.GrantItem{{Approval: "ap", Operation: "op", PayloadSHA256: "p"}}, RevokedBy: 44},
			`{"grant":"g","kind":"window","by":42,"at":1,"until":2,"tool":"tl","target":"tg","task":"t","items":[{"approval":"ap","operation":"op","payload_sha256":"p"}],"revoked_by":44}`},
		{"genesis, zero", audit.GenesisFact{}, `{"transitions_through":0,"approvals":0,"history_sha256":""}`},
		{"genesis, none pending", audit.GenesisFact{Pending: []string{}}, `{"transitions_through":0,"approvals":0,"history_sha256":""}`},
		{"genesis, full", audit.GenesisFact{Transitions: 1, Approvals: 2, Pending: []string{"a", "b"}, History: "h"},
			`{"transitions_through":1,"approvals":2,"pending":["a","b"],"history_sha256":"h"}`},
	} {
		got, err := json.Marshal(tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
