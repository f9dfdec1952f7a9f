package mcp_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

// autoApprove lets commits to the target go without a tap.
func autoApprove(p *policy.Policy) {
	p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
}

// A wait asked for longer than the cap ends at the cap: a pending operation
// is reported pending when the cap (shortened here from 50 s) runs out, not
// when the asked 120 s do.
func TestAwaitIsCapped(t *testing.T) {
	t.Parallel()
	r := newRigOpts(t, nil, func(o *mcp.Options) { o.MaxAwait = 300 * time.Millisecond })
	cs := r.connect(t, "in-memory", nil)
	_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "left waiting for a tap"})
	start := time.Now()
	_, got := call(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 120})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("await of 120 s took %s, want it ended at the cap", took)
	}
	if got.Status != action.StatusPending || got.NextAction != action.NextAwaitApproval || !strings.Contains(got.Reason, "after 300ms") {
		t.Errorf("await = %+v, want pending, waiting for approval, after the 300ms cap", got)
	}
}

// MaxAwait is the 50 s the tool promises, under the 60 s clients allow a call.
func TestMaxAwaitIsUnderAClientsCallTimeout(t *testing.T) {
	t.Parallel()
	if mcp.MaxAwait != 50*time.Second {
		t.Errorf("MaxAwait = %s, want 50s", mcp.MaxAwait)
	}
}

// An operation whose retry is scheduled (Telegram asked to wait) has no outcome
// yet: await_outcome reports it pending, the system retrying it, never an
// outcome that asks the agent to call again; list_pending shows it.
func TestAScheduledRetryStaysPending(t *testing.T) {
	t.Parallel()
	r := newRig(t, autoApprove)
	r.tg.Inject(telegramtest.TooManyRequests(30).For("sendMessage").InChat(target).Times(1))
	// The commit's own call lasts until its retry: another session follows it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.connect(t, "in-memory", nil).CallTool(ctx, &sdk.CallToolParams{Name: "commit_send_message",
		Arguments: map[string]any{"chat_id": "222", "text": "asked to wait"}})
	var sent journal.Operation
	waitUntil(t, "the scheduled retry", func() bool {
		ops, err := r.j.Operations(ctx, journal.Filter{States: []journal.State{journal.RetryWait}})
		if err != nil || len(ops) == 0 {
			return false
		}
		sent = ops[0]
		return true
	})
	cs := r.connect(t, "in-memory", nil)
	for tool, args := range map[string]map[string]any{
		"await_outcome": {"operation_id": sent.ID, "timeout_s": 1},
		"get_operation": {"operation_id": sent.ID},
	} {
		res, got := call(t, cs, tool, args)
		assertContract(t, tool, res, got)
		if got.Status != action.StatusPending || got.NextAction != action.NextNone || got.SideEffect != action.SideEffectNone || res.IsError {
			t.Errorf("%s = %+v, want pending, nothing sent, nothing for the agent to do", tool, got)
		}
		if got.RetryAfterMS <= 0 {
			t.Errorf("%s = %+v, want the retry's wait in retry_after_ms", tool, got)
		}
	}
	res, _ := call(t, cs, "list_pending", nil)
	var pending mcp.PendingOut
	decode(t, res, &pending)
	if !slices.ContainsFunc(pending.Operations, func(v journal.View) bool {
		return v.ID == sent.ID && v.State == journal.RetryWait
	}) {
		t.Errorf("list_pending = %+v, want %s in retry_wait", pending.Operations, sent.ID)
	}
}

// A resolved envelope leaves the resource list, with a list-changed
// notification: a person said whether it arrived, nothing is left to verify.
func TestAResolvedEnvelopeLeavesTheResources(t *testing.T) {
	t.Parallel()
	r := newRig(t, autoApprove)
	r.tg.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
	changed := make(chan struct{}, 8)
	cs := r.connect(t, "http", &sdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
		changed <- struct{}{}
	}})
	_, lost := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "its answer lost"})
	uri := "countersign://envelopes/" + lost.OperationID
	listed := func() bool {
		list, err := cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(list.Resources, func(res *sdk.Resource) bool { return res.URI == uri })
	}
	waitUntil(t, "the envelope among the resources", listed)
	for len(changed) > 0 {
		<-changed
	}
	if _, err := r.op.Resolve(context.Background(), lost.OperationID, true, "user 100"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no resource list-changed notification after the resolution")
	}
	waitUntil(t, "the envelope gone from the resources", func() bool { return !listed() })
}

// The note of an unknown outcome is written just after the outcome is recorded,
// so an agent told "unknown, verify" can ask for it first (a stdio server beside
// the bot that sends): while the journal says unknown, the read waits for the
// note and gives it; a note still missing after the wait is answered with the
// outcome and what to do, not "not found".
func TestANoteNotYetWrittenIsWaitedFor(t *testing.T) {
	t.Parallel()
	// The server reads a vault the operator has not written to yet.
	late, err := vault.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := newRigOpts(t, autoApprove, func(o *mcp.Options) { o.Vault, o.NoteWait = late, 20*time.Second })
	r.tg.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
	cs := r.connect(t, "in-memory", nil)
	_, lost := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "its answer lost, its note late"})
	if lost.SideEffect != action.SideEffectUnknown {
		t.Fatalf("commit = %+v, want unknown", lost)
	}

	brief, err := mcp.New(mcp.Options{Operator: r.op, Journal: r.j, Vault: late, Tools: r.tools, Policy: r.pol,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollEvery: 20 * time.Millisecond, NoteWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	ss, err := brief.Connect(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	briefly, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer briefly.Close()
	res, _ := call(t, briefly, "read_envelope", map[string]any{"operation_id": lost.OperationID})
	if !res.IsError || !strings.Contains(text(res), "its outcome is unknown and its note is not in the vault yet") || !strings.Contains(text(res), "request_verification") {
		t.Errorf("read_envelope with no note = %q (error %v), want the outcome unknown and what to do", text(res), res.IsError)
	}

	uri := "countersign://envelopes/" + lost.OperationID
	type read struct {
		rr  *sdk.ReadResourceResult
		err error
	}
	got := make(chan read, 1)
	go func() {
		rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
		got <- read{rr, err}
	}()
	waitUntil(t, "the read waiting for the note", func() bool {
		return strings.Contains(r.logs.String(), "not in the vault yet; waiting for it") && strings.Contains(r.logs.String(), lost.OperationID)
	})
	e, _, err := r.v.Get(lost.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.Write(e); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g.err != nil || !strings.Contains(g.rr.Contents[0].Text, "status: unknown") {
			t.Errorf("envelope resource = %v, %v; want the note once written", g.rr, g.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not end once the note was written")
	}
}
