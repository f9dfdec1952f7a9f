package command

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// The approvers' commands: /amend corrects a request's text before approving
// it, /grant gives an explicit grant (a tool to a chat for a time, or a task's
// listed approvals), /grants lists them and /revoke ends one. The operator
// checks who may give each; an approver who is no operator may.

// mayApproveHere reports whether user is on an approver list of the policy in
// force (the operator checks each request against the task's too).
func (h *Handler) mayApproveHere(user policy.UserID) bool {
	return h.Policy.Access.IsApprover(user) || h.Policy.Access.IsEscalation(user)
}

func (h *Handler) approverCommand(ctx context.Context, req Request, c Command) (Reply, error) {
	switch c.Name {
	case "amend":
		return h.Amend(ctx, c.OpID, req.User, c.Text)
	case "grant":
		if c.Tool != "" {
			g, err := h.Operator.GrantWindow(ctx, req.User, c.Tool, c.Target, c.For)
			if err != nil {
				return refused(err)
			}
			return Reply{Text: GrantText(g)}, nil
		}
		if c.Text == "" {
			return h.offerTask(ctx, req.User, c.OpID)
		}
		return h.GrantTask(ctx, req.User, c.OpID, c.Text)
	case "grants":
		gs, err := h.Operator.Grants(ctx)
		if err != nil {
			return Reply{}, err
		}
		if len(gs) == 0 {
			return Reply{Text: "No grant is in force."}, nil
		}
		var b strings.Builder
		for _, g := range gs {
			fmt.Fprintf(&b, "%s: %s to %s until %s, by user %d\n", g.ID, g.Tool, g.Target, g.Until.UTC().Format("2006-01-02 15:04 UTC"), g.By)
		}
		return Reply{Text: b.String() + "/revoke <grant_id> ends one."}, nil
	case "code":
		r, err := h.Confirm(ctx, Confirmation{User: req.User, Approval: c.OpID, Code: c.Text})
		return Reply{Text: joinLines(r.Text, r.Close), Result: r.Result, StepUp: r.StepUp}, err
	case "review":
		return h.reviewLink(ctx, req.User, c.OpID)
	case "revoke":
		g, err := h.Operator.Revoke(ctx, req.User, c.OpID)
		if err != nil {
			return refused(err)
		}
		return Reply{Text: fmt.Sprintf("Grant %s (%s to %s) is revoked: from now on each commit asks for a card again.", g.ID, g.Tool, g.Target)}, nil
	}
	return Reply{Text: Help()}, nil
}

// refused is the reply to a refusal of the operator's; other errors go up.
func refused(err error) (Reply, error) {
	if text, ok := refusal(err); ok {
		return Reply{Text: text}, nil
	}
	return Reply{}, err
}

// Amend replaces, in user's name, the text of the request that waits on
// approval id (an approval id, or the operation's), and returns the new
// approval to show: the old card is void.
func (h *Handler) Amend(ctx context.Context, id string, user policy.UserID, text string) (Reply, error) {
	approval, err := h.Operator.ApprovalID(ctx, id)
	if err != nil {
		return Reply{Text: fmt.Sprintf("%s waits on no approval: only a request not yet decided can be amended.", id)}, nil
	}
	ed, err := h.Operator.Edit(ctx, approval, user, text)
	if err != nil {
		return refused(err)
	}
	return Reply{Text: fmt.Sprintf("Amended %s: %s. The old card can no longer be approved; the new one follows.", ed.Operation.ID, operator.EditLine(ed.Edit))}, nil
}

// GrantText is the reply to a window grant: exactly what it approves without a
// card, and what it does not, so that the granter knows what they consented to.
func GrantText(g journal.Grant) string {
	return fmt.Sprintf("Grant %s: until %s, every %s to %s is approved in your name without a card, "+
		"whatever it says and whichever task asks (a person, a model or an MCP client), as long as one approver is enough for it. "+
		"It covers no other tool and no other chat; forwards and copies are never granted (each asks); "+
		"a lower grant_max ends it sooner. /revoke %s ends it; each commit under it names it.",
		g.ID, g.Until.UTC().Format("2006-01-02 15:04 UTC"), g.Tool, g.Target, g.ID)
}

// OfferText is the list a task's grant approves, and how to approve it.
func OfferText(tg operator.TaskGrant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s waits on %d approval(s). One grant approves exactly these, in your name:\n", tg.Task, len(tg.Items))
	for _, it := range tg.Items {
		fmt.Fprintf(&b, "• %s (approval %s), payload sha256 %s\n", it.Operation, it.Approval, it.PayloadSHA256[:12])
	}
	fmt.Fprintf(&b, "If any of them is decided, amended or joined by another before you confirm, nothing is approved. Code: %s", tg.Digest)
	return b.String()
}

func (h *Handler) offerTask(ctx context.Context, user policy.UserID, taskID string) (Reply, error) {
	tg, err := h.Operator.OfferTask(ctx, user, taskID)
	if err != nil {
		return refused(err)
	}
	if len(tg.Items) == 0 {
		return Reply{Text: fmt.Sprintf("Nothing of %s waits for approval.", taskID)}, nil
	}
	return Reply{Text: OfferText(tg) + fmt.Sprintf("\nTo approve them all: /grant %s %s", taskID, tg.Digest)}, nil
}

// GrantTask approves, in user's name, the approvals of taskID that the list
// with code showed, and commits each: the replies say what came of each.
func (h *Handler) GrantTask(ctx context.Context, user policy.UserID, taskID, code string) (Reply, error) {
	g, ds, err := h.Operator.GrantTask(ctx, user, taskID, code)
	if err != nil {
		return refused(err)
	}
	lines := []string{fmt.Sprintf("Grant %s approved %d approval(s) of %s in your name.", g.ID, len(ds), taskID)}
	for _, d := range ds {
		r, err := h.Operator.Proceed(ctx, d)
		if err != nil && !errors.Is(err, context.Canceled) {
			return Reply{}, err
		}
		lines = append(lines, Describe(r))
	}
	return Reply{Text: strings.Join(lines, "\n")}, nil
}

// joinLines joins the lines that are not empty.
func joinLines(lines ...string) string {
	var out []string
	for _, l := range lines {
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// reviewLink answers /review: the link to the review page of what opID waits
// on, for user alone, when user is shown that approval.
func (h *Handler) reviewLink(ctx context.Context, user policy.UserID, opID string) (Reply, error) {
	if h.Reviewer == nil {
		return Reply{Text: "This bot serves no review page (run it with -review-listen and -review-url)."}, nil
	}
	a, err := h.Approval(ctx, opID)
	if errors.Is(err, journal.ErrNotFound) {
		return Reply{Text: fmt.Sprintf("%s waits on no approval.", opID)}, nil
	}
	if err != nil {
		return Reply{}, err
	}
	if !a.Shows(user) {
		return Reply{Text: "You are not an approver of this request."}, nil
	}
	return Reply{Text: fmt.Sprintf("The whole payload of %s (sha256 %s), for you alone, until it is decided:\n%s", opID, a.PayloadSHA256[:12],
		h.Reviewer.ReviewLink(a.ID, a.PayloadSHA256, user))}, nil
}
