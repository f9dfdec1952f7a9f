package command_test

import (
	"context"
	"slices"
	"testing"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/policy"
)

// /whoami and /start answer anyone with their own id and roles, on every
// surface, and start nothing.
func TestWhoAmI(t *testing.T) {
	const escalationID = 4
	p := testPolicy(t, operatorID, approverID)
	p.Access.Escalation = []policy.UserID{escalationID}
	tests := []struct {
		name string
		user int64
		want string
	}{
		{"operator and approver", operatorID, "Your user id is 1. Your role here: operator and approver. /help lists the commands."},
		{"approver", approverID, "Your user id is 2. Your role here: approver."},
		{"escalation approver", escalationID, "Your user id is 4. Your role here: escalation approver."},
		{"stranger", strangerID, "Your user id is 3. You have no role here."},
	}
	w := newWorld(t)
	h := w.start(p, "console")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := command.WhoAmI(p.Access, policy.UserID(tt.user)); got != tt.want {
				t.Errorf("WhoAmI = %q, want %q", got, tt.want)
			}
			for _, line := range []string{"/whoami", "/start", "/start from-a-link"} {
				r, err := h.Handle(context.Background(), command.Request{User: policy.UserID(tt.user), Chat: "1", Line: line, Origin: "test:" + line})
				if err != nil || r.Text != tt.want {
					t.Errorf("Handle(%q) = %q, %v; want %q", line, r.Text, err, tt.want)
				}
			}
		})
	}
	if ops := w.operations(); len(ops) != 0 {
		t.Errorf("journal = %+v, want nothing", ops)
	}
}

// Roles lists each role a person holds, in the order /whoami names them.
func TestRoles(t *testing.T) {
	a := policy.Access{Operators: []policy.UserID{1}, Approvers: []policy.UserID{1, 2}, Escalation: []policy.UserID{2}}
	tests := []struct {
		user int64
		want []string
	}{
		{1, []string{command.RoleOperator, command.RoleApprover}},
		{2, []string{command.RoleApprover, command.RoleEscalation}},
		{3, nil},
	}
	for _, tt := range tests {
		if got := command.Roles(a, policy.UserID(tt.user)); !slices.Equal(got, tt.want) {
			t.Errorf("Roles(%d) = %q, want %q", tt.user, got, tt.want)
		}
	}
}
