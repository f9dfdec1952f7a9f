package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The approvals beyond one tap in a run with the mix: sends to quorumChat need
// both people's approval, and now and then an approver corrects a card's text
// (Edit, then a reply to the prompt) before anyone decides it. The audit trail
// is verified after every kill of a lone process, and at the end.

// quorumChat is the target whose commits need two approvers.
const quorumChat = firstChat

// quorumPolicy is the policy's quorum rule for the run.
func quorumPolicy() string {
	return fmt.Sprintf("\nquorum:\n  - chats: [\"%d\"]\n    approvals: 2\n", quorumChat)
}

// amend taps Edit on card in chat and replies to the prompt with the request's
// text, corrected; it reports whether it did (a card with no Edit button, or
// a prompt that did not come, is left to the other answers).
func (w *world) amend(chat int64, card telegramtest.Message) bool {
	prefix := apData.FindString(string(card.ReplyMarkup))
	if prefix == "" || !strings.Contains(string(card.ReplyMarkup), prefix+"e\"") {
		return false
	}
	op := opPattern.FindString(card.Text)
	text, ok := w.payloadText(op)
	if !ok || text == "" {
		return false
	}
	before := len(w.srv.Messages(chat))
	w.srv.PushCallbackQuery(chat, chat, card.MessageID, prefix+"e")
	var prompt telegramtest.Message
	found := func(s *telegramtest.Server) bool {
		ms := s.Messages(chat)
		for _, m := range ms[min(before, len(ms)):] {
			if strings.Contains(m.Text, "Reply to this message with the new text for "+op) {
				prompt = m
				return true
			}
		}
		return false
	}
	if w.srv.WaitTimeout(5*time.Second, found) != nil {
		return false
	}
	w.note("edit before approval")
	w.srv.PushReply(chat, chat, prompt.MessageID, text+" (amended)")
	return true
}

// payloadText is the text of operation id's payload as the journal holds it.
func (w *world) payloadText(id string) (string, bool) {
	j, done, err := w.openJournal()
	if err != nil {
		return "", false
	}
	defer done()
	op, err := j.Operation(context.Background(), id)
	return op.Payload.Text, err == nil
}

// verifyAudit checks the audit trail of the journal, and keeps what it found
// for the report: after a kill of a lone process, while it is down, and at the
// end. Replicas write on while one is down: their trail is checked at the end
// only, when all have stopped.
func (w *world) verifyAudit(when string, end bool) {
	if len(w.reps) > 1 && !end {
		return
	}
	j, done, err := w.openJournal()
	if err != nil {
		w.auditFaults = append(w.auditFaults, fmt.Sprintf("%s: the journal did not open: %v", when, err))
		return
	}
	defer done()
	rep, err := j.VerifyAudit(context.Background())
	w.auditChecks++
	switch {
	case err != nil:
		w.auditFaults = append(w.auditFaults, fmt.Sprintf("%s: %v", when, err))
	case rep.Fault != nil:
		w.auditFaults = append(w.auditFaults, fmt.Sprintf("%s: %s", when, rep.Fault))
	}
}

// auditIntact: the trail verified after every kill and at the end.
func (w *world) auditIntact() Invariant {
	w.verifyAudit("at the end", true)
	in := Invariant{Name: fmt.Sprintf("the audit trail verifies after every kill and at the end (%d checks)", w.auditChecks)}
	in.Broken = append(in.Broken, w.auditFaults...)
	return in
}

// quorumHeld: no commit went out with fewer different approvers than the
// run's policy asks for its tool and target.
func (w *world) quorumHeld(ctx context.Context, j *journal.Journal, ops []journal.Operation) Invariant {
	in := Invariant{Name: "no commit with fewer approvals than its policy asks"}
	p, err := policy.Load(w.policies)
	if err != nil {
		in.Broken = append(in.Broken, err.Error())
		return in
	}
	for _, op := range wentOut(ops) {
		a, err := j.LatestApproval(ctx, op.ID)
		if err != nil || a.DecidedBy == journal.ByPolicy {
			continue // nothingUnapproved reports these
		}
		if need := p.Approvals(op.Tool, op.Payload.Target); a.Approvals() < need {
			in.Broken = append(in.Broken, fmt.Sprintf("%s to %s went out on %d approval(s) of the %d asked", op.ID, op.Payload.Target, a.Approvals(), need))
		}
		voters := map[policy.UserID]bool{}
		for _, v := range a.Votes {
			if voters[v.By] {
				in.Broken = append(in.Broken, fmt.Sprintf("%s: user %d counted twice", op.ID, v.By))
			}
			voters[v.By] = true
		}
	}
	return in
}

// lastApprovedOnly: an operation an approver edited went out as its last
// approved payload only: the approval it went under is bound to that payload,
// and no text an edit replaced reached a chat.
func (w *world) lastApprovedOnly(ctx context.Context, j *journal.Journal, ops []journal.Operation, deliveries map[string]int) Invariant {
	in := Invariant{Name: "no commit of a payload other than the last approved one after an edit"}
	edited := 0
	for _, op := range ops {
		es, err := j.Edits(ctx, op.ID)
		if err != nil {
			in.Broken = append(in.Broken, err.Error())
			continue
		}
		if len(es) == 0 {
			continue
		}
		edited++
		for _, e := range es {
			if n := deliveries[e.Old.Text]; n > 0 && e.Old.Text != op.Payload.Text {
				in.Broken = append(in.Broken, fmt.Sprintf("%s: %q, replaced by an edit, was delivered %d time(s)", op.ID, e.Old.Text, n))
			}
		}
		if op.State != journal.Committed && op.State != journal.Unknown {
			continue
		}
		a, err := j.LatestApproval(ctx, op.ID)
		if err != nil || a.Decision != journal.DecideApprove || a.PayloadSHA256 != op.Payload.SHA256() {
			in.Broken = append(in.Broken, fmt.Sprintf("%s went out, and its last approval (%s, %v) is not of its payload", op.ID, a.Decision, err))
		}
	}
	w.count["operations edited before approval, found at the end"] = edited
	return in
}
