package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

const (
	alice  = 100 // the approver
	target = 222 // where messages go
	token  = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	bearer = "mcp-bearer-7f3a9c2e51d84b06"
)

// logBuffer collects log lines safely across goroutines.
type logBuffer = syncbuf.Buffer

// rig is the process that sends (countersign run -mcp-listen): a Telegram bot over the
// fake Bot API, its operator, and the MCP server on that operator.
type rig struct {
	t     *testing.T
	tg    *telegramtest.Server
	j     *journal.Journal
	v     *vault.Vault
	op    *operator.Operator
	srv   *mcp.Server
	tools *tools.Registry
	pol   *policy.Policy
	logs  *logBuffer
}

func testPolicy(t *testing.T, edit func(*policy.Policy)) *policy.Policy {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{alice}, Approvers: []policy.UserID{alice}}
	if edit != nil {
		edit(p)
	}
	return p
}

func newRig(t *testing.T, edit func(*policy.Policy)) *rig {
	t.Helper()
	return newRigWith(t, edit)
}

// newRigOpts is newRig with the MCP server's options edited (shorter limits).
func newRigOpts(t *testing.T, edit func(*policy.Policy), opts func(*mcp.Options)) *rig {
	t.Helper()
	return newRigFull(t, edit, opts)
}

// newRigWith is newRig over a journal opened with jopts (a size limit: a full disk).
func newRigWith(t *testing.T, edit func(*policy.Policy), jopts ...journal.Option) *rig {
	t.Helper()
	return newRigFull(t, edit, nil, jopts...)
}

func newRigFull(t *testing.T, edit func(*policy.Policy), opts func(*mcp.Options), jopts ...journal.Option) *rig {
	t.Helper()
	r := &rig{t: t, tg: telegramtest.NewServer(t, telegramtest.Options{Token: token}), logs: &logBuffer{}}
	p := testPolicy(t, edit)
	ctx, stop := context.WithCancel(context.Background())
	dir := t.TempDir()
	if len(jopts) > 0 { // made whole first: a size limit is of a journal that exists
		j, err := journal.Open(ctx, filepath.Join(dir, "journal.db"))
		if err != nil {
			t.Fatal(err)
		}
		j.Close()
	}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	var bot *telegram.Bot
	rg := rigtest.New(t, rigtest.Dir(dir), rigtest.Policy(p), rigtest.Owning(), rigtest.JournalOptions(jopts...),
		rigtest.SenderOf(func(j *journal.Journal) tools.Sender {
			var err error
			bot, err = telegram.New(ctx, j, telegram.Options{Token: token, APIURL: r.tg.URL(), PollTimeout: time.Second, SendTimeout: 2 * time.Second,
				Limits: &telegram.Limits{Overall: 10000, PerChat: 10000, PerGroup: 10000, ChatBurst: 1000}, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			return bot.Sender()
		}),
		rigtest.Parts(func(w *wiring.Parts) {
			w.Logger, w.SweepEvery, w.WatchEvery = logger, 50*time.Millisecond, 50*time.Millisecond
		}))
	j, v, reg := rg.Journal, rg.Vault, rg.Tools
	r.op = rg.Operator
	o := mcp.Options{Operator: r.op, Journal: j, Vault: v, Tools: reg, Policy: p, Logger: logger,
		PollEvery: 20 * time.Millisecond, WatchEvery: 50 * time.Millisecond}
	if opts != nil {
		opts(&o)
	}
	var err error
	r.srv, err = mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r.j, r.v, r.tools, r.pol = j, v, reg, p
	done := make(chan error, 1)
	go func() {
		done <- bot.Serve(ctx, telegram.Deps{Policy: p, Handler: rg.Handler})
	}()
	go r.srv.Watch(ctx)
	// The bot hears the operator's events from before its first poll on.
	if err := r.tg.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool { return s.Polling() }); err != nil {
		t.Fatalf("the bot never polled: %v\n%s", err, r.logs)
	}
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the bot did not stop")
		}
		j.Close()
	})
	return r
}

// transports are the two ways a client reaches the server in these tests.
var transports = []string{"in-memory", "http"}

// connect opens a client session over the named transport; changed hears the
// resource list-changed notifications, progress the progress notifications.
func (r *rig) connect(t *testing.T, how string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, opts)
	ctx := context.Background()
	var tr sdk.Transport
	switch how {
	case "in-memory":
		st, ct := sdk.NewInMemoryTransports()
		ss, err := r.srv.Connect(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		tr = ct
	case "http":
		hs := httptest.NewServer(r.srv.Handler(bearer))
		t.Cleanup(hs.Close)
		tr = &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerAuth{bearer}}}
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect over %s: %v", how, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bearerAuth sets the bearer token on every request.
type bearerAuth struct{ token string }

func (b bearerAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// call calls a tool and returns the result and its structured content decoded
// as the contract, failing the test on a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.CallToolResult, action.Result) {
	t.Helper()
	return callWith(t, cs, &sdk.CallToolParams{Name: tool, Arguments: args})
}

func callWith(t *testing.T, cs *sdk.ClientSession, p *sdk.CallToolParams) (*sdk.CallToolResult, action.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	var r action.Result
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: structured content %s is not the contract: %v", p.Name, b, err)
		}
	}
	return res, r
}

// text is a result's readable content.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// assertContract checks what every contract result must hold: its fields from
// their closed sets, and one readable line that names the operation.
func assertContract(t *testing.T, what string, res *sdk.CallToolResult, r action.Result) {
	t.Helper()
	statuses := []action.Status{action.StatusSucceeded, action.StatusRetryable, action.StatusRepairable, action.StatusTerminal, action.StatusPending}
	effects := []action.SideEffect{action.SideEffectNone, action.SideEffectPrepared, action.SideEffectCommitted, action.SideEffectUnknown}
	nexts := []action.NextAction{action.NextNone, action.NextRetry, action.NextRepair, action.NextStop, action.NextVerify, action.NextAwaitApproval}
	in := func(v any, set any) bool {
		b, _ := json.Marshal(set)
		return strings.Contains(string(b), `"`+v.(string)+`"`)
	}
	switch {
	case !in(string(r.Status), statuses) || !in(string(r.SideEffect), effects) || !in(string(r.NextAction), nexts):
		t.Errorf("%s: not the contract: %+v", what, r)
	case r.OperationID == "" || !strings.HasPrefix(r.OperationID, "op-"):
		t.Errorf("%s: no operation id: %+v", what, r)
	case r.RetryAfterMS < 0:
		t.Errorf("%s: retry_after_ms %d", what, r.RetryAfterMS)
	}
	line := text(res)
	if len(res.Content) != 1 || !strings.Contains(line, r.OperationID) {
		t.Errorf("%s: content %q, want one readable line naming %s", what, line, r.OperationID)
	}
}

// waitUntil waits for cond, failing after a deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// path is the states an operation went through, from the journal.
func path(t *testing.T, j *journal.Journal, id string) []journal.State {
	t.Helper()
	ts, err := j.Transitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var p []journal.State
	for _, tr := range ts {
		p = append(p, tr.To)
	}
	return p
}
