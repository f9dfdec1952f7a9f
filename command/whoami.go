package command

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/policy"
)

// The roles a person may hold, as /whoami names them.
const (
	RoleOperator   = "operator"
	RoleApprover   = "approver"
	RoleEscalation = "escalation approver"
)

// Roles names what user may do under a: give commands (operator), decide
// approvals (approver), decide those nobody decided in time (escalation
// approver). None for a person no list names.
func Roles(a policy.Access, user policy.UserID) []string {
	var roles []string
	if a.IsOperator(user) {
		roles = append(roles, RoleOperator)
	}
	if a.IsApprover(user) {
		roles = append(roles, RoleApprover)
	}
	if a.IsEscalation(user) {
		roles = append(roles, RoleEscalation)
	}
	return roles
}

// WhoAmI is the answer to /whoami (and Telegram's /start): the person's user
// id, which is what an operator puts in the access lists, and their roles.
// It tells nothing about the bot beyond what the person may do in it.
func WhoAmI(a policy.Access, user policy.UserID) string {
	roles := Roles(a, user)
	if len(roles) == 0 {
		return fmt.Sprintf("Your user id is %d. You have no role here.", user)
	}
	text := fmt.Sprintf("Your user id is %d. Your role here: %s.", user, strings.Join(roles, " and "))
	if a.IsOperator(user) {
		text += " /help lists the commands."
	}
	return text
}
