package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A call refused for repair and made again unchanged is the loop guard's stop,
// a tool error the agent sees, and nothing is sent.
func TestARepeatedRefusedCallIsADoomLoop(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			cs := r.connect(t, how, nil)
			args := map[string]any{"chat_id": "not a chat!", "text": "to nowhere over " + how}
			res, first := call(t, cs, "commit_send_message", args)
			assertContract(t, "the first call", res, first)
			if first.Status != action.StatusRepairable || res.IsError {
				t.Fatalf("first call = %+v, want a repair that is no tool error", first)
			}
			res, again := call(t, cs, "commit_send_message", args)
			assertContract(t, "the repeat", res, again)
			if !res.IsError || again.Cause != action.CauseDoomLoop || !strings.Contains(strings.ToLower(text(res)), "possible doom loop") {
				t.Errorf("repeat = %+v (isError %v, %q), want the doom-loop stop as a tool error", again, res.IsError, text(res))
			}
		})
	}
	if n := sendsTo(r.tg, target); n != 0 {
		t.Errorf("%d sendMessage calls to %d, want none", n, target)
	}
}

// An approval nobody decides expires, and the wait reports it: terminal,
// nothing sent, the cause named, with a progress notification for the change
// to a client that sent a progress token.
func TestAnExpiryEndsTheWait(t *testing.T) {
	t.Parallel()
	// Long enough that the wait starts before the expiry, short enough to wait for.
	r := newRig(t, func(p *policy.Policy) { p.ApprovalTTL = 1500 * time.Millisecond })
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			var mu sync.Mutex
			var progress []string
			cs := r.connect(t, how, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				progress = append(progress, req.Params.Message)
			}})
			_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "left to expire over " + how})
			p := &sdk.CallToolParams{Name: "await_outcome", Arguments: map[string]any{"operation_id": sent.OperationID, "timeout_s": 20}}
			p.SetProgressToken("wait-" + how)
			res, got := callWith(t, cs, p)
			waitUntil(t, "the progress notification", func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) > 0 })
			mu.Lock()
			if want := sent.OperationID + " is expired"; len(progress) != 1 || progress[0] != want {
				t.Errorf("progress = %q, want [%q]", progress, want)
			}
			mu.Unlock()
			assertContract(t, "await_outcome", res, got)
			if got.Status != action.StatusTerminal || got.Cause != action.CauseApprovalExpired || got.SideEffect != action.SideEffectNone {
				t.Errorf("await = %+v, want terminal, expired, nothing sent", got)
			}
			if op, _ := r.j.Operation(context.Background(), sent.OperationID); op.State != journal.Expired {
				t.Errorf("state %s, want expired", op.State)
			}
		})
	}
	if n := len(r.tg.Messages(target)); n != 0 {
		t.Errorf("%d messages delivered, want none", n)
	}
}

// A send Telegram accepted and whose answer was lost is unknown: the agent is
// told to verify, the envelope appears as a resource (with a list-changed
// notification) and reads back with what to do, the follow-up tools find it,
// request_verification puts the question to the approver in Telegram and
// resolves nothing, and the same call again is the loop guard's stop, never a
// resend.
func TestAnUnknownOutcomeReadsBackAsAnEnvelope(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
	})
	r.tg.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(2))
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			changed := make(chan struct{}, 8)
			cs := r.connect(t, how, &sdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
				changed <- struct{}{}
			}})
			args := map[string]any{"chat_id": "222", "text": "accepted, answer lost, over " + how}
			res, got := call(t, cs, "commit_send_message", args)
			assertContract(t, "commit", res, got)
			if got.SideEffect != action.SideEffectUnknown || got.NextAction != action.NextVerify || res.IsError {
				t.Fatalf("commit = %+v, want unknown, verify", got)
			}
			uri := "countersign://envelopes/" + got.OperationID
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no resource list-changed notification after the unknown outcome")
			}
			waitUntil(t, "the envelope among the resources", func() bool {
				list, err := cs.ListResources(context.Background(), nil)
				if err != nil {
					return false
				}
				for _, res := range list.Resources {
					if res.URI == uri {
						return true
					}
				}
				return false
			})
			rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: uri})
			if err != nil {
				t.Fatal(err)
			}
			note := rr.Contents[0].Text
			for _, want := range []string{"operation_id: " + got.OperationID, "status: unknown", "Retry without verification: forbidden", "/resolve " + got.OperationID} {
				if !strings.Contains(note, want) {
					t.Errorf("envelope resource lacks %q:\n%s", want, note)
				}
			}
			res, _ = call(t, cs, "list_envelopes", map[string]any{"unresolved": true, "target": "+222"})
			var listed mcp.EnvelopesOut
			decode(t, res, &listed)
			found := false
			for _, e := range listed.Envelopes {
				found = found || e.OperationID == got.OperationID
			}
			if !found {
				t.Errorf("list_envelopes = %+v, want %s", listed, got.OperationID)
			}
			res, _ = call(t, cs, "read_envelope", map[string]any{"operation_id": got.OperationID})
			var read mcp.EnvelopeOut
			decode(t, res, &read)
			if read.Envelope.Status != "unknown" || read.Note != note {
				t.Errorf("read_envelope = %+v, want the note the resource gave:\n%s\n--- read_envelope's:\n%s", read.Envelope, note, read.Note)
			}
			res, asked := call(t, cs, "request_verification", map[string]any{"operation_id": got.OperationID})
			assertContract(t, "request_verification", res, asked)
			if asked.SideEffect != action.SideEffectUnknown || asked.NextAction != action.NextVerify || res.IsError {
				t.Errorf("request_verification = %+v, want it still unknown, to verify", asked)
			}
			if err := r.tg.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool {
				for _, m := range s.Messages(alice) {
					if strings.Contains(string(m.ReplyMarkup), "rs1:"+got.OperationID) {
						return true
					}
				}
				return false
			}); err != nil {
				t.Errorf("the approver was not asked to verify %s: %v\n%s", got.OperationID, err, r.logs)
			}
			if op, _ := r.j.Operation(context.Background(), got.OperationID); op.State != journal.Unknown {
				t.Errorf("after request_verification %s is %s, want still unknown: only a person resolves", got.OperationID, op.State)
			}
			res, again := call(t, cs, "commit_send_message", args)
			if !res.IsError || again.Cause != action.CauseDoomLoop {
				t.Errorf("the same send again = %+v, want the doom-loop stop as a tool error", again)
			}
		})
	}
	if n := sendsTo(r.tg, target); n != 2 {
		t.Errorf("%d sendMessage calls to %d, want 2 (one per transport, none resent)", n, target)
	}
}

// sendsTo counts the sendMessage calls to chat, answered or not.
func sendsTo(tg *telegramtest.Server, chat int64) int {
	n := 0
	for _, c := range tg.CallsTo("sendMessage") {
		if c.ChatID == chat {
			n++
		}
	}
	return n
}

// A server beside no bot (a stdio countersign mcp whose bot stopped) creates no commit,
// and a wait on an operation made earlier ends at once saying that nothing moves
// it, instead of running out its bound.
func TestWithNoBotNothingWaitsForNobody(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	_, sent := call(t, r.connect(t, "in-memory", nil), "commit_send_message", map[string]any{"chat_id": "222", "text": "made while the bot ran"})
	alone, err := mcp.New(mcp.Options{Operator: r.op, Journal: r.j, Vault: r.v, Tools: r.tools, Policy: r.pol,
		Owner: func() (int, bool, error) { return 0, false, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(alone.Check(), "no bot is running") {
		t.Errorf("Check() = %q, want it to say no bot runs", alone.Check())
	}
	st, ct := sdk.NewInMemoryTransports()
	if _, err := alone.Connect(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	before, _ := r.j.Count(context.Background(), journal.Filter{})
	_, refused := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "nobody would send this"})
	if after, _ := r.j.Count(context.Background(), journal.Filter{}); refused.Status != action.StatusTerminal || refused.OperationID != "" || after != before {
		t.Errorf("commit = %+v, %d operations journaled; want a terminal stop and none", refused, after-before)
	}
	start := time.Now()
	_, got := call(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 20})
	if got.Status != action.StatusPending || got.Cause != action.CauseNoSender || time.Since(start) > 5*time.Second {
		t.Errorf("await = %+v after %s, want it at once, pending, saying no bot runs", got, time.Since(start))
	}
}

// request_verification asks the approvers once per operation per interval:
// twelve calls from two sessions send one notice, and every repeat answers that
// the approvers were already asked, when, and that nothing was sent again.
func TestRequestVerificationAsksOncePerInterval(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
	})
	r.tg.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(2))
	sessions := []*sdk.ClientSession{r.connect(t, "in-memory", nil), r.connect(t, "http", nil)}
	_, lost := call(t, sessions[0], "commit_send_message", map[string]any{"chat_id": "222", "text": "its answer lost"})
	_, other := call(t, sessions[0], "commit_send_message", map[string]any{"chat_id": "222", "text": "another lost"})
	if lost.SideEffect != action.SideEffectUnknown || other.SideEffect != action.SideEffectUnknown {
		t.Fatalf("commits = %+v, %+v; want both unknown", lost, other)
	}
	var first string
	for i := range 12 {
		res, got := call(t, sessions[i%2], "request_verification", map[string]any{"operation_id": lost.OperationID})
		assertContract(t, "request_verification", res, got)
		switch {
		case i == 0 && strings.Contains(got.Reason, "already"):
			t.Errorf("the first request = %q, want it asked", got.Reason)
		case i == 0:
			first = got.Reason
		case !strings.Contains(got.Reason, "already asked") || !strings.Contains(got.Reason, "nothing was sent again"):
			t.Errorf("request %d = %q, want it already asked, nothing sent again", i+1, got.Reason)
		}
	}
	// A request for another operation, after them: its notice is the barrier
	// past which every notice of the first has been sent.
	call(t, sessions[1], "request_verification", map[string]any{"operation_id": other.OperationID})
	notices := func(op string) int {
		n := 0
		for _, m := range r.tg.Messages(alice) {
			if strings.Contains(m.Text, "Please verify") && strings.Contains(string(m.ReplyMarkup), "rs1:"+op) {
				n++
			}
		}
		return n
	}
	if err := r.tg.WaitTimeout(10*time.Second, func(*telegramtest.Server) bool { return notices(other.OperationID) == 1 }); err != nil {
		t.Fatalf("the approver was not asked to verify %s: %v", other.OperationID, err)
	}
	if got := notices(lost.OperationID); got != 1 {
		t.Errorf("%d notices to verify %s after 12 requests, want 1 (first answer %q)", got, lost.OperationID, first)
	}
}
