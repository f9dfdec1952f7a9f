package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

// Report is what a run did and which promises held.
type Report struct {
	Seed      int64
	Actions   map[string]int
	EndStates map[journal.State]int
	Delivered int
	Drafts    int // prepare_reply operations of model turns: drafts have no end state
	// ModelRequests is how many requests the scripted model received, retries included.
	ModelRequests int
	// MCPCalls are the tool calls the MCP callers made; MCPCommits their commit
	// calls (a call again after one was cut or found no bot counts again);
	// MCPReconnects the sessions they made again after one was lost.
	MCPCalls, MCPCommits, MCPReconnects int
	// StateUnknowns are the state-setting operations whose outcome was ever
	// unknown; StateSettled those the system settled, StateToPerson those left
	// to a person after the repeat (or the read) could not settle them either.
	StateUnknowns, StateSettled, StateToPerson int
	// ByTool counts the operations of each tool by end state ("tool state").
	ByTool     map[string]int
	Elapsed    time.Duration
	FullDisk   bool // the data folder was on its own disk, to be filled
	Invariants []Invariant
}

// Invariant is one promise and what broke it, if anything did.
type Invariant struct {
	Name   string
	Broken []string // empty: it held
}

// OK reports whether every promise held.
func (r *Report) OK() bool {
	for _, in := range r.Invariants {
		if len(in.Broken) > 0 {
			return false
		}
	}
	return true
}

// Print writes the report: seed, counts, end states, and each invariant.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "seed %d\n", r.Seed)
	fmt.Fprintln(w, "actions and faults:")
	for _, k := range sortedKeys(r.Actions) {
		fmt.Fprintf(w, "  %-40s %d\n", k, r.Actions[k])
	}
	fmt.Fprintln(w, "operations by end state:")
	for _, k := range sortedKeys(r.EndStates) {
		fmt.Fprintf(w, "  %-40s %d\n", k, r.EndStates[k])
	}
	if len(r.ByTool) > 0 {
		fmt.Fprintln(w, "operations by tool and end state:")
		for _, k := range sortedKeys(r.ByTool) {
			fmt.Fprintf(w, "  %-40s %d\n", k, r.ByTool[k])
		}
		fmt.Fprintf(w, "state-setting unknowns: %d, settled without a human: %d, left to a person: %d\n", r.StateUnknowns, r.StateSettled, r.StateToPerson)
	}
	fmt.Fprintf(w, "messages delivered to target chats: %d\n", r.Delivered)
	fmt.Fprintf(w, "drafts prepared by model turns: %d; model requests: %d\n", r.Drafts, r.ModelRequests)
	fmt.Fprintf(w, "MCP calls: %d, of them commits: %d; MCP sessions made again: %d\n", r.MCPCalls, r.MCPCommits, r.MCPReconnects)
	fmt.Fprintf(w, "run took %s\n", r.Elapsed.Round(time.Second))
	fmt.Fprintln(w, "invariants:")
	for _, in := range r.Invariants {
		if len(in.Broken) == 0 {
			fmt.Fprintf(w, "  ok      %s\n", in.Name)
			continue
		}
		fmt.Fprintf(w, "  BROKEN  %s\n", in.Name)
		for _, b := range in.Broken[:min(len(in.Broken), 10)] {
			fmt.Fprintf(w, "          %s\n", b)
		}
	}
	if r.OK() {
		fmt.Fprintln(w, "PASS")
	} else {
		fmt.Fprintln(w, "FAIL")
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// check reads the journal, the vault and the fake Telegram after the bot stopped.
func (w *world) check() *Report {
	r := &Report{Seed: w.cfg.Seed, Actions: w.count, EndStates: map[journal.State]int{}, ByTool: map[string]int{}}
	ctx := context.Background()
	j, done, err := w.openJournal()
	if err != nil {
		r.Invariants = append(r.Invariants, Invariant{"the journal opens", []string{err.Error()}})
		return r
	}
	defer done()
	all, err := j.Operations(ctx, journal.Filter{})
	if err != nil {
		r.Invariants = append(r.Invariants, Invariant{"the journal reads", []string{err.Error()}})
		return r
	}
	ops := commits(all)
	r.Drafts = len(all) - len(ops)
	byText := map[string][]journal.Operation{}
	for _, op := range ops {
		r.EndStates[op.State]++
		for _, text := range deliveredTexts(op) {
			byText[text] = append(byText[text], op)
		}
	}
	deliveries := w.deliveries()
	for text, n := range deliveries {
		r.Delivered += n
		if n > 1 && len(wentOut(byText[text])) >= n {
			r.Actions["delivered once per operation, by two operations of one text (a cut MCP commit asked again)"]++
		}
	}
	r.Invariants = []Invariant{
		w.noDuplicates(deliveries, byText),
		w.nothingUnapproved(ctx, j, deliveries, byText),
		w.journalMatchesTelegram(ops, deliveries, byText),
		everyOperationEnded(ops),
		w.everyCommandTakenOnce(ctx, j),
		noToolRanTwice(all),
		w.journalAndVaultAgree(ops),
		w.noSecrets(),
	}
	if w.agents != nil {
		r.Invariants = append(r.Invariants, w.agents.operationsJournaled(all), w.agents.viewsHold(ops, deliveries), w.agents.outcomesLearned())
	}
	if w.mix != nil {
		w.checkActions(ctx, j, all, r)
		r.Invariants = append(r.Invariants, w.quorumHeld(ctx, j, ops), w.lastApprovedOnly(ctx, j, ops, deliveries))
		if w.codes != nil {
			r.Invariants = append(r.Invariants, w.stepUpChecks(ctx, j, ops)...)
		}
	}
	r.Invariants = append(r.Invariants, w.databaseInvariants(ctx, j, r)...)
	r.Invariants = append(r.Invariants, w.auditIntact())
	if w.webhook() {
		r.Invariants = append(r.Invariants, w.floodKept())
	}
	return r
}

// flood are the limits the fake Telegram enforces: about 30 messages a second
// overall and one a second in a chat, with no burst.
var flood = telegramtest.FloodLimits{PerSecond: 30, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}

// floodKept checks that Telegram's flood limits refused nothing to replicas:
// they count their sends together in the journal (telegram/shared.go), which
// outlives a killed process, whatever was killed, cut off or restarted. A lone
// process counts in memory, so its first sends after a kill may earn a 429
// (waited out, and the card shown again): it is not checked.
func (w *world) floodKept() Invariant {
	inv := Invariant{Name: "Telegram's flood limits refused no send (the replicas keep one budget)"}
	if n := w.srv.FloodRejections(); n > 0 {
		inv.Broken = append(inv.Broken, fmt.Sprintf("%d sends refused with 429 by the flood limits", n))
	}
	return inv
}

// deliveries counts, per text (or caption), the messages the fake Telegram holds
// in the target chats, by the text each was sent with: an edit changes what a
// message reads, not what was delivered, and a message deleted since was
// delivered all the same.
func (w *world) deliveries() map[string]int {
	got := map[string]int{}
	for _, m := range w.srv.AllMessages() {
		if m.Chat.ID >= firstChat {
			got[w.sentText(m)]++
		}
	}
	return got
}

// noDuplicates: no operation delivered twice. Every text of a run is one
// operation's, except where an MCP caller asked again after its commit call was
// cut by a kill, not knowing whether it had been journaled: that is a second
// operation, by design, and approved too it is a second message. So a text may
// arrive as often as it has operations that went out, and never more.
func (w *world) noDuplicates(deliveries map[string]int, byText map[string][]journal.Operation) Invariant {
	in := Invariant{Name: "no operation delivered twice"}
	for text, n := range deliveries {
		if out := len(wentOut(byText[text])); n > max(1, out) {
			in.Broken = append(in.Broken, fmt.Sprintf("%q delivered %d times by %d operations", text, n, out))
		}
	}
	return in
}

// wentOut are the operations that may have reached Telegram: committed or unknown.
func wentOut(ops []journal.Operation) []journal.Operation {
	var out []journal.Operation
	for _, op := range ops {
		if op.State == journal.Committed || op.State == journal.Unknown {
			out = append(out, op)
		}
	}
	return out
}

func (w *world) nothingUnapproved(ctx context.Context, j *journal.Journal, deliveries map[string]int, byText map[string][]journal.Operation) Invariant {
	in := Invariant{Name: "nothing delivered without an approval or an auto-approve rule"}
	for text := range deliveries {
		for _, op := range wentOut(byText[text]) { // none: reported by the next invariant
			a, err := j.LatestApproval(ctx, op.ID)
			switch {
			case err != nil:
				in.Broken = append(in.Broken, fmt.Sprintf("%s delivered with no approval: %v", op.ID, err))
			case a.Decision != journal.DecideApprove:
				in.Broken = append(in.Broken, fmt.Sprintf("%s delivered, its approval is %q", op.ID, a.Decision))
			case a.DecidedBy == journal.ByPolicy && !isAuto(op.Payload.Target):
				in.Broken = append(in.Broken, fmt.Sprintf("%s auto-approved to %s, which no rule covers", op.ID, op.Payload.Target))
			case a.DecidedBy != journal.ByPolicy && a.DecidedBy != operator && a.DecidedBy != approver:
				in.Broken = append(in.Broken, fmt.Sprintf("%s approved by %d, who is not an approver", op.ID, a.DecidedBy))
			}
		}
	}
	return in
}

func isAuto(target string) bool {
	id, err := strconv.Atoi(target)
	return err == nil && id >= autoChat && id < autoChat+autoChats
}

func (w *world) journalMatchesTelegram(ops []journal.Operation, deliveries map[string]int, byText map[string][]journal.Operation) Invariant {
	in := Invariant{Name: "committed means delivered, and every delivery is known to the journal"}
	committed := map[string]int{}
	for _, op := range ops {
		if op.State != journal.Committed {
			continue
		}
		for _, text := range deliveredTexts(op) {
			if committed[text]++; committed[text] > deliveries[text] {
				in.Broken = append(in.Broken, fmt.Sprintf("%s is committed, and Telegram holds no %q for it", op.ID, text))
			}
		}
	}
	for text := range deliveries {
		ops, ok := byText[text]
		switch {
		case !ok:
			in.Broken = append(in.Broken, fmt.Sprintf("%q was delivered and the journal knows no operation for it", text))
		case len(wentOut(ops)) == 0:
			in.Broken = append(in.Broken, fmt.Sprintf("%s was delivered and the journal says %s", ops[0].ID, ops[0].State))
		}
	}
	return in
}

func everyOperationEnded(ops []journal.Operation) Invariant {
	in := Invariant{Name: "every operation ended (or is unknown with an envelope); none left committing"}
	for _, op := range ops {
		switch {
		case op.State.Final():
		case op.State == journal.Unknown && op.Envelope != "":
		default:
			in.Broken = append(in.Broken, fmt.Sprintf("%s is %s", op.ID, op.State))
		}
	}
	return in
}

func (w *world) everyCommandTakenOnce(ctx context.Context, j *journal.Journal) Invariant {
	in := Invariant{Name: "every command and plain text Telegram handed over was taken exactly once"}
	if unread := w.srv.ConfirmedUnread(); len(unread) > 0 {
		in.Broken = append(in.Broken, fmt.Sprintf("updates confirmed before anyone read them: %v", unread))
	}
	for _, c := range w.commands {
		task, err := j.TaskByOrigin(ctx, fmt.Sprintf("telegram:message:%d:%d", operator, c.msgID))
		if err != nil {
			in.Broken = append(in.Broken, fmt.Sprintf("no task for the command %q: %v", c.text, err))
			continue
		}
		ops, err := j.Operations(ctx, journal.Filter{TaskID: task.ID})
		switch {
		case err != nil:
			in.Broken = append(in.Broken, fmt.Sprintf("the operations of %q: %v", c.text, err))
		case c.model && len(commits(ops)) > 1:
			// A turn a kill cut short may have made none; never more than it was asked.
			in.Broken = append(in.Broken, fmt.Sprintf("the model turn %q made %d commits, want at most 1", c.text, len(commits(ops))))
		case c.line != "" && len(ops) > 1:
			// A call refused as it was prepared (a message deleted meanwhile) makes none.
			in.Broken = append(in.Broken, fmt.Sprintf("the command %q made %d operations, want at most 1", c.line, len(ops)))
		case !c.model && c.line == "" && len(ops) != 1:
			in.Broken = append(in.Broken, fmt.Sprintf("the command %q made %d operations, want 1", c.text, len(ops)))
		}
	}
	return in
}

func (w *world) journalAndVaultAgree(ops []journal.Operation) Invariant {
	in := Invariant{Name: "the journal and the vault agree"}
	v, err := vault.Open(w.vaultDir())
	if err != nil {
		in.Broken = append(in.Broken, err.Error())
		return in
	}
	for _, op := range ops {
		if op.Envelope == "" {
			if op.State == journal.Unknown {
				in.Broken = append(in.Broken, op.ID+" is unknown without an envelope")
			}
			continue
		}
		e, _, err := v.Get(op.ID)
		if err != nil {
			in.Broken = append(in.Broken, fmt.Sprintf("%s: envelope %s: %v", op.ID, op.Envelope, err))
			continue
		}
		want := map[journal.State]envelope.Status{journal.Unknown: envelope.StatusUnknown, journal.Committed: envelope.StatusCommitted}[op.State]
		if op.State == journal.NotDelivered || op.State == journal.Cancelled || op.State == journal.Failed || op.State == journal.Expired || op.State == journal.Rejected {
			continue // after not delivered, a retry may have been refused, cancelled or expired
		}
		if want != "" && e.Status != want {
			in.Broken = append(in.Broken, fmt.Sprintf("%s is %s and its envelope says %s", op.ID, op.State, e.Status))
		}
	}
	return in
}

// commits are the operations of commit_* tools: the ones that can reach Telegram.
// A draft (prepare_reply) stays prepared: it has no end state to reach.
func commits(ops []journal.Operation) []journal.Operation {
	var out []journal.Operation
	for _, op := range ops {
		if strings.HasPrefix(op.Tool, "commit_") {
			out = append(out, op)
		}
	}
	return out
}

// noToolRanTwice: within a task, no two operations of one tool carry one payload.
// Every text in a run is unique, and the duplicate check is off, so two would be
// one call run twice: a retried model request, or a replayed update, running a
// tool again.
func noToolRanTwice(ops []journal.Operation) Invariant {
	in := Invariant{Name: "no tool ran twice for one call (retried model requests, replayed updates)"}
	seen := map[[4]string]string{}
	for _, op := range ops {
		k := [4]string{op.TaskID, op.Tool, op.Payload.Text, op.PayloadSHA256}
		if first, ok := seen[k]; ok {
			in.Broken = append(in.Broken, fmt.Sprintf("%s ran twice in task %s: %s and %s (%q)", op.Tool, op.TaskID, first, op.ID, op.Payload.Text))
			continue
		}
		seen[k] = op.ID
	}
	return in
}

// noSecrets looks for the bot token, the model's API key, the MCP bearer token and
// the webhook secret in every file of the data folder (the replicas' and their
// vault) and in the logs of the bot processes and of countersign mcp.
func (w *world) noSecrets() Invariant {
	in := Invariant{Name: "no secret in any file or log line"}
	secret := token[strings.Index(token, ":")+1:]
	check := func(path string) {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), secret) {
			in.Broken = append(in.Broken, path+" holds the bot token")
		}
		if err == nil && strings.Contains(string(b), modelKey) {
			in.Broken = append(in.Broken, path+" holds the model's API key")
		}
		if err == nil && strings.Contains(string(b), mcpToken) {
			in.Broken = append(in.Broken, path+" holds the MCP bearer token")
		}
		if err == nil && strings.Contains(string(b), webhookSecret) {
			in.Broken = append(in.Broken, path+" holds the webhook secret")
		}
	}
	filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			check(path)
		}
		return nil
	})
	for _, r := range w.reps {
		check(r.log.Name())
	}
	if w.agents != nil {
		for _, c := range w.agents.callers {
			if c.log != nil {
				check(c.log.Name()) // a stdio countersign mcp's stderr
			}
		}
	}
	return in
}
