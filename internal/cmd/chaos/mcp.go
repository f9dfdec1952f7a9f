package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// mcpToken is the bearer token of the bot's -mcp-listen: a secret the run looks
// for in every file and log line, as it does the bot token.
const mcpToken = "countersign-mcp-chaos-7f3a91c4e2b8d605"

// The outside agents of a run: two over stdio (`countersign mcp` child processes beside
// the bot, which live across its kills) and two over HTTP to the bot's
// -mcp-listen (whose sessions die with the bot, and reconnect).
const stdioAgents, httpAgents = 2, 2

// agents are the MCP callers of a run and what each of them saw.
type agents struct {
	w       *world
	ctx     context.Context // the run's: interrupted, the callers stop following
	callers []*caller
	addr    string            // the bot's -mcp-listen address
	addrs   map[string]string // each replica's, by name (mcpreplicas.go); nil for one bot
	jobs    sync.WaitGroup

	mu      sync.Mutex
	count   map[string]int           // what the callers did, by name
	calls   map[string]int           // commit calls made, by text (a cut call counts)
	views   map[string]action.Result // the last result each operation's caller saw
	texts   map[string]string        // operation id → text
	looked  map[string]bool          // operations read again after the wind-down
	broken  []string                 // promises seen broken as they were made
	busy    int                      // sends still being followed
	moved   int                      // calls made: the wind-down's sign of work
	callsN  int
	commits int
}

// draw is the caller's next choice among n.
func (c *caller) draw(n int) int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.rnd.IntN(n)
}

// caller is one outside agent: one MCP session at a time, a new one after a
// session was lost.
type caller struct {
	a    *agents
	name string
	http bool
	rnd  *rand.Rand // the caller's own choices, from the seed (draw)
	rmu  sync.Mutex // rnd's: the commits a caller follows run at once

	mu  sync.Mutex
	cs  *sdk.ClientSession
	log *os.File // a stdio child's stderr
	at  string   // the replica an HTTP caller follows ("" for one bot)
}

// newAgents makes the callers; none is connected yet. addr is a free loopback
// address for the bot's -mcp-listen.
func newAgents(ctx context.Context, w *world, root string) (*agents, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	a := &agents{ctx: ctx, w: w, addr: addr, count: map[string]int{}, calls: map[string]int{}, views: map[string]action.Result{}, texts: map[string]string{}, looked: map[string]bool{}}
	for i := range stdioAgents + httpAgents {
		c := &caller{a: a, http: i >= stdioAgents, rnd: rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(0xa9e+i)))}
		c.name = fmt.Sprintf("chaos-stdio-%d", i)
		if c.http {
			c.name = fmt.Sprintf("chaos-http-%d", i-stdioAgents)
		} else if c.log, err = os.Create(fmt.Sprintf("%s/bot-mcp-%d.log", root, i)); err != nil {
			return nil, err
		}
		a.callers = append(a.callers, c)
	}
	return a, nil
}

func (a *agents) note(what string) {
	a.mu.Lock()
	a.count["mcp: "+what]++
	a.mu.Unlock()
	if a.w.cfg.Verbose {
		fmt.Fprintf(a.w.out, "  mcp: %s\n", what)
	}
}

func (a *agents) breaks(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.broken = append(a.broken, fmt.Sprintf(format, args...))
}

// send has caller i commit text to target, and follow the operation, in the
// background.
func (a *agents) send(i int, target int64, text string) {
	a.commit(i, "commit_send_message", map[string]any{"chat_id": fmt.Sprint(target), "text": text}, text)
}

// commit has caller i call commit tool with args, and follow the operation, in
// the background. key is the run's words for the call, unique in the run and
// found in its payload (a text, a caption, an HTTP body).
func (a *agents) commit(i int, tool string, args map[string]any, key string) {
	c := a.callers[i]
	a.mu.Lock()
	a.busy++
	a.mu.Unlock()
	a.jobs.Add(1)
	go func() {
		defer a.jobs.Done()
		defer func() {
			a.mu.Lock()
			a.busy--
			a.mu.Unlock()
		}()
		c.commit(tool, args, key)
	}()
}

// afterRestart has every HTTP caller that held a session look at the pending
// operations, as an agent resuming its work would: the session died with the
// bot, so each one finds it lost and connects again. Behind replicas, so does
// every caller that follows a replica now down (down), session or not: its
// next call finds the replica gone, and it moves on.
func (a *agents) afterRestart(down ...string) {
	for _, c := range a.callers {
		c.mu.Lock()
		held := c.http && c.cs != nil
		follows := c.http && c.at != "" && slices.Contains(down, c.at)
		c.mu.Unlock()
		if !held && !follows {
			continue
		}
		a.jobs.Add(1)
		go func() {
			defer a.jobs.Done()
			c.call("list_pending", nil, 3)
		}()
	}
}

// idle reports whether no send is still followed, and how many calls were made.
func (a *agents) idle() (bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busy == 0, a.moved
}

// finish has every caller read, once more, each of its operations as the
// journal holds it (the last view the checks compare), then ends the sessions.
func (a *agents) finish() {
	a.jobs.Wait()
	a.mu.Lock()
	ids := make([]string, 0, len(a.views))
	for id := range a.views {
		ids = append(ids, id)
	}
	a.mu.Unlock()
	slices.Sort(ids)
	for i, id := range ids {
		c := a.callers[i%len(a.callers)]
		if r, ok := c.call("get_operation", map[string]any{"operation_id": id}, 3); ok {
			a.view(id, r)
			a.mu.Lock()
			a.looked[id] = true
			a.mu.Unlock()
		}
	}
	for _, c := range a.callers {
		c.close()
	}
}

// view records r as what the caller of operation id saw last, and checks at once
// that a committed one is in Telegram: a tool never reports a delivery that did
// not happen.
func (a *agents) view(id string, r action.Result) {
	a.mu.Lock()
	a.views[id] = r
	text := a.texts[id]
	a.mu.Unlock()
	if r.SideEffect != action.SideEffectCommitted || r.Status != action.StatusSucceeded {
		return
	}
	j, done, err := a.w.openJournal()
	if err != nil {
		return
	}
	defer done()
	if op, err := j.Operation(context.Background(), id); err == nil && !a.w.landed(j, op) {
		a.breaks("%s reported committed over MCP, and Telegram (or the service) holds no %q", id, text)
	}
}

// connect returns the caller's session, making one (a new stdio child, or an HTTP
// session to the bot, waiting while the bot is down) when it has none.
func (c *caller) connect() (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	client := sdk.NewClient(&sdk.Implementation{Name: c.name, Version: "chaos"}, nil)
	deadline := time.Now().Add(90 * time.Second)
	for {
		// The session lives as long as the context it was connected with: only a
		// connect that takes too long is cut.
		ctx, cancel := context.WithCancel(context.Background())
		slow := time.AfterFunc(20*time.Second, cancel)
		var t sdk.Transport
		if c.http {
			t = &sdk.StreamableClientTransport{Endpoint: c.endpoint(), MaxRetries: -1,
				HTTPClient: &http.Client{Transport: bearer{mcpToken}}}
		} else {
			cmd := exec.Command(c.a.w.cfg.Bot, append(append([]string{"mcp"}, c.a.w.dataArgs()...), "-policies", c.a.w.policies)...)
			cmd.Env = append(c.a.w.childEnv(), fmt.Sprintf("BOT_OPERATORS=%d", operator), fmt.Sprintf("BOT_APPROVERS=%d,%d", operator, approver))
			cmd.Stderr = c.log
			t = &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}
		}
		cs, err := client.Connect(ctx, t, nil)
		slow.Stop()
		if err == nil {
			c.cs = cs
			return cs, nil
		}
		cancel()
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: connect: %w", c.name, err)
		}
		if c.http {
			c.moveOn() // behind replicas: the one it follows is down, another is up
		}
		time.Sleep(200 * time.Millisecond) // the bot is down: it comes back
	}
}

// lost drops session cs, after a call on it failed: the next call makes another.
func (c *caller) lost(cs *sdk.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == cs {
		c.cs = nil
		go cs.Close()
		c.a.note("reconnect (" + map[bool]string{true: "http", false: "stdio"}[c.http] + ")")
		if c.http {
			c.moveOn()
		}
	}
}

func (c *caller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		c.cs.Close()
		c.cs = nil
	}
	if c.log != nil {
		c.log.Close()
	}
}

// try makes one call in the current session. ok is false when the call failed
// (the session was lost: the bot was killed under an HTTP call) or came back as a
// tool error.
func (c *caller) try(name string, args map[string]any, progress bool) (action.Result, *sdk.CallToolResult, error) {
	cs, err := c.connect()
	if err != nil {
		return action.Result{}, nil, err
	}
	c.a.mu.Lock()
	c.a.moved++
	c.a.callsN++
	c.a.mu.Unlock()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken(c.name + "-" + fmt.Sprint(time.Now().UnixNano()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		if c.a.w.cfg.Verbose {
			fmt.Fprintf(c.a.w.out, "  mcp: %s %s: %v\n", c.name, name, err)
		}
		// A JSON-RPC error the server wrote (not the transport's own -32005: the
		// request never got an answer).
		var answered *jsonrpc.Error
		if errors.As(err, &answered) && answered.Code != codeRejectedByTransport {
			return action.Result{}, nil, fmt.Errorf("%w: %w", errAnswered, err) // the session is fine
		}
		c.lost(cs)
		return action.Result{}, nil, err
	}
	var r action.Result
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &r)
	return r, res, nil
}

// codeRejectedByTransport is the SDK's code for a request its transport could
// not deliver, or whose answer it lost (jsonrpc2.ErrRejected, internal).
const codeRejectedByTransport = -32005

// errAnswered is a call the server answered with a protocol error, not a result:
// the session goes on.
var errAnswered = errors.New("answered with a protocol error")

// call makes a read-only call, again in a new session when the session was lost,
// at most tries times.
func (c *caller) call(name string, args map[string]any, tries int) (action.Result, bool) {
	for range tries {
		r, res, err := c.try(name, args, false)
		if err == nil && !res.IsError {
			return r, true
		}
		if err == nil {
			return r, false // a tool error: asking again would not change it
		}
	}
	return action.Result{}, false
}

// commit calls tool with args (text is the run's key of the call) and follows
// the operation to its outcome, as an agent that reads the contract would.
func (c *caller) commit(tool string, args map[string]any, text string) {
	var id string
	for attempt := 0; id == "" && attempt < 20 && c.a.ctx.Err() == nil; attempt++ {
		c.a.mu.Lock()
		c.a.calls[text]++
		c.a.commits++
		c.a.mu.Unlock()
		r, res, err := c.try(tool, args, false)
		switch {
		case errors.Is(err, errAnswered):
			// Not a result (the journal refused the write, on a full disk): the
			// agent does not know whether it was journaled, and calls again soon.
			c.a.note("commit answered with a protocol error")
			time.Sleep(time.Second)
		case err != nil:
			// Cut by the kill: journaled or not, the agent cannot tell. Half the
			// callers look for it first; the others call again, in a new session,
			// which is a second operation if the first was journaled.
			c.a.note("commit call cut, outcome not known to the caller")
			if c.draw(2) == 0 {
				if found := c.findPending(args, text); found != "" {
					c.a.note("cut commit found in list_pending")
					id = found
				}
			}
			if id == "" {
				c.a.note("cut commit called again in a new session")
			}
		case r.Cause == action.CauseDiskFull:
			// The journal had no room (a full disk): nothing sent, and whether it
			// was journaled is not known. The caller looks first, as the result says.
			c.a.note("commit refused for a full disk")
			if found := c.findPending(args, text); found != "" {
				c.a.note("full-disk commit found in list_pending")
				id = found
				break
			}
			time.Sleep(time.Duration(r.RetryAfterMS) * time.Millisecond / 30) // the run's time is short
		case res.IsError:
			c.a.note("commit answered with a tool error")
			return
		case r.Cause == action.CauseNoSender:
			c.a.note("commit while no bot runs: nothing created")
			time.Sleep(500 * time.Millisecond)
		case r.OperationID == "":
			c.a.note("commit refused: " + string(r.Status))
			return
		default:
			id = r.OperationID
			c.a.mu.Lock()
			c.a.texts[id] = text
			c.a.mu.Unlock()
			c.a.view(id, r)
		}
	}
	if id == "" {
		return
	}
	c.a.mu.Lock()
	c.a.texts[id] = text
	c.a.mu.Unlock()
	c.follow(id)
}

// findPending looks, in list_pending, for the operation a cut commit of a text
// may have made: the same target and text. Another call is not looked for: it
// is called again.
func (c *caller) findPending(args map[string]any, text string) string {
	target, ok := args["chat_id"]
	if _, isText := args["text"]; !ok || !isText {
		return ""
	}
	for range 3 {
		_, res, err := c.try("list_pending", map[string]any{}, false)
		if err != nil {
			continue
		}
		var out struct {
			Operations []journal.View `json:"operations"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		for _, v := range out.Operations {
			if v.Target == target && v.Text == text {
				return v.ID
			}
		}
		return ""
	}
	return ""
}

// follow waits for operation id's outcome (await_outcome, or get_operation now
// and then), reads its envelope and asks for verification at times when it is
// unknown, and goes on while a person may still resolve it.
func (c *caller) follow(id string) {
	began := time.Now()
	asked := false
	for time.Since(began) < 3*time.Minute && c.a.ctx.Err() == nil {
		name, args := "await_outcome", map[string]any{"operation_id": id, "timeout_s": 2 + c.draw(8)}
		if c.draw(4) == 0 {
			name, args = "get_operation", map[string]any{"operation_id": id}
		}
		start := time.Now()
		r, res, err := c.try(name, args, name == "await_outcome" && c.draw(2) == 0)
		if err != nil || res.IsError {
			if err == nil {
				c.a.note(name + " answered with a tool error")
			}
			time.Sleep(300 * time.Millisecond)
			continue
		}
		c.a.view(id, r)
		switch {
		case r.Status == action.StatusPending:
			// A get_operation, or a wait that cannot wait (no bot runs): not at once.
			if time.Since(start) < time.Second {
				time.Sleep(time.Second)
			}
			continue
		case r.SideEffect == action.SideEffectUnknown:
			c.unknown(id, &asked)
			time.Sleep(2 * time.Second) // a person resolves it, or not yet
			continue
		case r.Status == action.StatusRetryable && r.NextAction == action.NextRetry:
			// Resolved not delivered: a /retry from the phone may send it again.
			c.a.note("follow: resolved not delivered")
			time.Sleep(2 * time.Second)
			continue
		}
		c.a.note("follow: ended " + string(r.Status) + "/" + string(r.SideEffect))
		return
	}
	c.a.note("follow: given up after 3 minutes")
}

// unknown is what an agent does with an unknown outcome: reads the envelope (the
// tool, the resource or the list), and asks the approvers to verify, at times.
func (c *caller) unknown(id string, asked *bool) {
	switch c.draw(4) {
	case 0:
		if _, res, err := c.try("read_envelope", map[string]any{"operation_id": id}, false); err == nil {
			if res.IsError || !strings.Contains(textOf(res), id) {
				c.a.note("read_envelope of an unknown outcome failed")
			} else {
				c.a.note("read_envelope")
			}
		}
	case 1:
		if cs, err := c.connect(); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "countersign://envelopes/" + id})
			cancel()
			switch {
			case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
				c.lost(cs)
			case err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, id):
				c.a.note("envelope resource of an unknown outcome not read")
			default:
				c.a.note("envelope resource read")
			}
		}
	case 2:
		if _, res, err := c.try("list_envelopes", map[string]any{"unresolved": true}, false); err == nil && !res.IsError {
			c.a.note("list_envelopes")
		}
	}
	if !*asked && c.draw(2) == 0 {
		*asked = true
		if _, res, err := c.try("request_verification", map[string]any{"operation_id": id}, false); err == nil {
			// Refused when a person resolved it meanwhile: a plain tool error.
			c.a.note(map[bool]string{false: "request_verification", true: "request_verification refused (resolved meanwhile)"}[res.IsError])
		}
	}
}

func textOf(res *sdk.CallToolResult) string {
	var b bytes.Buffer
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// bearer sets the bearer token on every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// operationsJournaled: every operation an MCP caller was given is in the journal,
// made by surface mcp for Telegram to deliver, with the caller's text; every
// operation of surface mcp is one a caller asked for; and no commit call made
// more than one (a text has at most as many operations as calls asked for it).
func (a *agents) operationsJournaled(all []journal.Operation) Invariant {
	in := Invariant{Name: "every MCP operation journaled, surface mcp, transport telegram; one per commit call at most"}
	byID := map[string]journal.Operation{}
	made := map[string]int{}
	for _, op := range all {
		byID[op.ID] = op
		key := mcpKey(op)
		if key == "" && op.Surface == "mcp" && op.State == journal.Failed {
			key = a.texts[op.ID] // failed as it was prepared (a full disk): no payload holds the call's words
		}
		isMCP := key != ""
		switch {
		case op.Surface == "mcp" && !strings.HasPrefix(op.Tool, "commit_"):
			in.Broken = append(in.Broken, fmt.Sprintf("%s is a %s over MCP, which no caller made", op.ID, op.Tool))
		case op.Surface == "mcp" && !isMCP, op.Surface != "mcp" && isMCP:
			in.Broken = append(in.Broken, fmt.Sprintf("%s (%q) was made by surface %q", op.ID, op.Payload.Text, op.Surface))
		case isMCP:
			made[key]++
		}
	}
	for text, n := range made {
		if n > a.calls[text] {
			in.Broken = append(in.Broken, fmt.Sprintf("%q: %d operations from %d commit calls", text, n, a.calls[text]))
		}
	}
	for _, id := range sortedKeys(a.texts) {
		op, ok := byID[id]
		switch {
		case !ok:
			in.Broken = append(in.Broken, fmt.Sprintf("%s was given to an MCP caller and is not in the journal", id))
		case op.Surface != "mcp" || op.Transport != "telegram" || mcpKey(op) != a.texts[id] && op.State != journal.Failed:
			in.Broken = append(in.Broken, fmt.Sprintf("%s: surface %q, transport %q, call %q; want mcp, telegram, %q", id, op.Surface, op.Transport, mcpKey(op), a.texts[id]))
		}
	}
	return in
}

// viewsHold: no MCP tool reported committed for an operation that was not
// delivered (checked as it was reported), and what each caller saw last does not
// contradict the journal: a committed or a stopped result is for good, and the
// callers' last look, after the wind-down, is the journal's final state.
func (a *agents) viewsHold(ops []journal.Operation, deliveries map[string]int) Invariant {
	in := Invariant{Name: "what MCP tools reported, the journal and Telegram bear out"}
	in.Broken = append(in.Broken, a.broken...)
	byID := map[string]journal.Operation{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	for _, id := range sortedKeys(a.views) {
		v, op := a.views[id], byID[id]
		want, final := states(v)
		switch {
		case op.ID == "":
			continue // reported by the invariant before
		case final && !slices.Contains(want, op.State), a.looked[id] && !slices.Contains(want, op.State):
			in.Broken = append(in.Broken, fmt.Sprintf("%s: the caller last saw %s/%s/%s, the journal ends %s", id, v.Status, v.SideEffect, v.NextAction, op.State))
		case v.SideEffect == action.SideEffectNone && final && len(wentOut(sameText(ops, op))) == 0 && deliveries[op.Payload.Text] > 0:
			in.Broken = append(in.Broken, fmt.Sprintf("%s: the caller was told nothing was sent, and Telegram holds %q", id, op.Payload.Text))
		}
	}
	return in
}

// states are the journal states a result stands for, and whether it is for good.
func states(r action.Result) ([]journal.State, bool) {
	switch {
	case r.Status == action.StatusSucceeded && r.SideEffect == action.SideEffectCommitted:
		return []journal.State{journal.Committed}, true
	case r.Status == action.StatusTerminal && r.SideEffect == action.SideEffectNone:
		return []journal.State{journal.Rejected, journal.Expired, journal.Cancelled, journal.Failed}, true
	case r.SideEffect == action.SideEffectUnknown:
		return []journal.State{journal.Unknown}, false
	case r.Status == action.StatusRepairable:
		// Refused as it was prepared, or by the service, with nothing sent: the
		// operation ended failed, and the caller may make another.
		return []journal.State{journal.Failed}, false
	case r.Status == action.StatusRetryable:
		return []journal.State{journal.NotDelivered, journal.RetryWait}, false
	}
	return []journal.State{journal.AwaitingApproval, journal.Approved, journal.Committing, journal.RetryWait, journal.Prepared, journal.Verified}, false
}

func sameText(ops []journal.Operation, op journal.Operation) []journal.Operation {
	var out []journal.Operation
	for _, o := range ops {
		if o.Payload.Text == op.Payload.Text {
			out = append(out, o)
		}
	}
	return out
}
