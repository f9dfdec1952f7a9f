package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/skips"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A short seeded run, as CI makes it: the real binary, every kind of fault, model
// turns against the scripted model, a full disk (as root), two kills, and every
// promise checked. The wind-down waits as long as work moves, so a loaded machine
// makes it slower, never red.
func TestChaosShortRun(t *testing.T) {
	skips.Long(t, "a chaos run of the bot binary, about a minute")
	var out bytes.Buffer
	rep, err := Run(context.Background(), Config{Seed: 11, Ops: 30, Kills: 2, Duration: 25 * time.Second, Chats: 12, ModelShare: 0.3, MCPShare: 0.3, FullDisk: true,
		Actions: 0.4, Policies: "../../../policies.yaml"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a promise broke:\n%s", out.String())
	}
	if rep.Actions["kill -9 and restart"] != 2 || rep.Delivered == 0 || rep.Actions["plain text for a model turn"] == 0 || rep.ModelRequests == 0 {
		t.Errorf("the run did not do what it says:\n%s", out.String())
	}
	if rep.Actions["send by an MCP caller"] == 0 || rep.MCPCommits == 0 || rep.MCPReconnects == 0 {
		t.Errorf("the run made no MCP sends, or no caller lost its session to a kill:\n%s", out.String())
	}
	mix := 0
	for k, n := range rep.ByTool {
		if !strings.HasPrefix(k, "commit_send_message ") {
			mix += n
		}
	}
	if mix == 0 {
		t.Errorf("the run made no calls that are not text sends:\n%s", out.String())
	}
	// The second factor is tried in every run: cards of the step-up chat
	// tapped, their prompts answered with fresh codes. Whether a coded commit
	// goes out and a replay is seen refused depends on the run's kills and
	// full disk (a person has one fresh code a 30 s step, the chat asks two
	// votes, and its approvals expire): the schedule tries both until it has
	// seen them, and a run that did not says so.
	if rep.Actions["step-up: approve tapped, a code asked"] == 0 || rep.Actions["step-up: a fresh code"] == 0 {
		t.Errorf("the run did not try the second factor: no code asked, or none given:\n%s", out.String())
	}
	if rep.Actions["step-up: commits that went out with codes"] == 0 || rep.Actions["step-up: a used code given again, refused"] == 0 {
		t.Logf("this run's step-up invariants held partly untried: %d commits went out with codes, %d used codes given again were refused",
			rep.Actions["step-up: commits that went out with codes"], rep.Actions["step-up: a used code given again, refused"])
	}
	if rep.FullDisk && rep.Actions["full disk"] == 0 {
		t.Errorf("the disk was mounted and never filled:\n%s", out.String())
	}
	t.Log(out.String()) // with -v: the figures of the run
}

// The short run with three replicas on PostgreSQL, as CI makes it: updates by
// webhook through the balancer (again after a refused connection, at times twice),
// replicas killed one or two at a time, model turns, and every promise checked.
func TestChaosReplicasOnPostgres(t *testing.T) {
	skips.Long(t, "a chaos run of three bot processes, about a minute")
	cfg := Config{Seed: 13, Ops: 24, Kills: 3, Duration: 20 * time.Second, Chats: 10, ModelShare: 0.3, MCPShare: 0.3,
		Policies: "../../../policies.yaml", Replicas: 3, Journal: pgtest.Server(t)}
	var out bytes.Buffer
	rep, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a promise broke:\n%s", out.String())
	}
	if rep.Actions["kill -9 and restart"] < 3 || rep.Delivered == 0 || rep.ModelRequests == 0 || rep.Actions["webhook: updates taken"] == 0 {
		t.Errorf("the run did not do what it says:\n%s", out.String())
	}
	if rep.MCPCommits == 0 || rep.Actions["mcp: caller moved on to another replica"] == 0 {
		t.Errorf("no MCP commits, or no caller moved on from a replica that died:\n%s", out.String())
	}
	if n := rep.Actions["beside command failed"]; n != 0 {
		t.Errorf("%d commands beside the bot failed (the journal is always in reach in this run):\n%s", n, out.String())
	}
	t.Log(out.String())
}

// The short replica run with the database in the mix, on a PostgreSQL server
// of the run's own: replicas cut off it (a reset or a silent hang, healed before
// the replica notices or past its lease) and the server restarted (cleanly or
// as a crash); a replica that lost its name lock exits and is started again.
// Besides every promise of the other runs: nothing sent and no update taken by
// a replica out of reach of the database, and what was on the wire then settled
// by the replicas' rules, never sent again.
func TestChaosPartitionsAndRestartsOnPostgres(t *testing.T) {
	skips.Long(t, "a chaos run of three bot processes and a PostgreSQL server, about a minute")
	needServerBinaries(t)
	cfg := Config{Seed: 7, Ops: 24, Kills: 1, Duration: 25 * time.Second, Chats: 10, ModelShare: 0.3,
		Policies: "../../../policies.yaml", Replicas: 3, OwnPostgres: true, Partitions: 3, PGRestarts: 2}
	var out bytes.Buffer
	rep, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a promise broke:\n%s", out.String())
	}
	cuts := rep.Actions["partition (hang) between a replica and the database"] + rep.Actions["partition (reset) between a replica and the database"]
	restarts := rep.Actions["postgres restart (fast)"] + rep.Actions["postgres restart (immediate, a crash)"]
	// The path taken: the server's restarts end every replica's name lock, and
	// those replicas exit and come back; a cut past the ping's bound does too.
	if cuts != 3 || restarts != 2 || rep.Actions["replica exited: its name lock lost"] < 3 || rep.Actions["replica exited otherwise"] > 0 || rep.Delivered == 0 {
		t.Errorf("the run did not do what it says:\n%s", out.String())
	}
	t.Log(out.String())
}

// The checks catch what they name: a check that cannot fail proves nothing.
func TestInvariantsCatchBrokenPromises(t *testing.T) {
	w := &world{}
	// Two operations of one text: an MCP caller asked again after its commit call
	// was cut. Two messages are theirs; a third is one delivered twice.
	asked := func(text string, n int) []journal.Operation {
		var ops []journal.Operation
		for i := range n {
			ops = append(ops, journal.Operation{ID: fmt.Sprintf("op-%s%d", text[:3], i), State: journal.Committed, Payload: action.Payload{Text: text}})
		}
		return ops
	}
	texts := map[string][]journal.Operation{"once": asked("once", 1), "twice": asked("twice", 1), "again": asked("again", 2), "thrice": asked("thrice", 2)}
	if in := w.noDuplicates(map[string]int{"once": 1, "twice": 2, "again": 2, "thrice": 3}, texts); len(in.Broken) != 2 ||
		!strings.Contains(in.Broken[0]+in.Broken[1], `"twice"`) || !strings.Contains(in.Broken[0]+in.Broken[1], `"thrice"`) {
		t.Errorf("a text delivered twice by one operation, three times by two: %+v", in)
	}
	committed := journal.Operation{ID: "op-aaaaaa", State: journal.Committed, Payload: action.Payload{Text: "never arrived"}}
	unknown := journal.Operation{ID: "op-bbbbbb", State: journal.Unknown, Payload: action.Payload{Text: "arrived"}}
	failed := journal.Operation{ID: "op-cccccc", State: journal.Failed, Payload: action.Payload{Text: "arrived anyway"}}
	byText := map[string][]journal.Operation{committed.Payload.Text: {committed}, unknown.Payload.Text: {unknown}, failed.Payload.Text: {failed}}
	in := w.journalMatchesTelegram([]journal.Operation{committed, unknown, failed},
		map[string]int{"arrived": 1, "arrived anyway": 1, "a stray": 1}, byText)
	if got := strings.Join(in.Broken, "\n"); len(in.Broken) != 3 || !strings.Contains(got, "op-aaaaaa") ||
		!strings.Contains(got, "op-cccccc") || !strings.Contains(got, "a stray") {
		t.Errorf("journal against Telegram:\n%s", got)
	}
	twice := []journal.Operation{
		{ID: "op-ffffff", TaskID: "t-1", Tool: "commit_send_message", Payload: action.Payload{Text: "once asked"}},
		{ID: "op-gggggg", TaskID: "t-1", Tool: "commit_send_message", Payload: action.Payload{Text: "once asked"}},
		{ID: "op-hhhhhh", TaskID: "t-2", Tool: "commit_send_message", Payload: action.Payload{Text: "once asked"}},
	}
	if in := noToolRanTwice(twice); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "op-gggggg") {
		t.Errorf("a tool run twice in one task: %+v", in)
	}
	left := []journal.Operation{{ID: "op-dddddd", State: journal.Committing}, {ID: "op-eeeeee", State: journal.Unknown}}
	if in := everyOperationEnded(left); len(in.Broken) != 2 {
		t.Errorf("an operation left committing and an unknown without envelope: %+v", in)
	}
}

// The MCP checks catch what they name: an operation of a caller missing, made by
// another surface, or made twice by one call; and a result the journal
// contradicts.
func TestMCPInvariantsCatchBrokenPromises(t *testing.T) {
	mcpOp := func(id, text string, st journal.State) journal.Operation {
		return journal.Operation{ID: id, Tool: "commit_send_message", Surface: "mcp", Transport: "telegram", State: st, Payload: action.Payload{Text: text}}
	}
	a := &agents{calls: map[string]int{"chaos 1 mcp 1": 1, "chaos 1 mcp 2": 1, "chaos 1 mcp 3": 2},
		texts: map[string]string{"op-mmmmm1": "chaos 1 mcp 1", "op-mmmmm2": "chaos 1 mcp 2", "op-gone00": "chaos 1 mcp 4"}}
	other := mcpOp("op-mmmmm2", "chaos 1 mcp 2", journal.Committed)
	other.Surface = "telegram"
	all := []journal.Operation{mcpOp("op-mmmmm1", "chaos 1 mcp 1", journal.Committed), mcpOp("op-mmmmm5", "chaos 1 mcp 1", journal.Committed),
		other, mcpOp("op-mmmmm3", "chaos 1 mcp 3", journal.Committed), mcpOp("op-mmmmm4", "chaos 1 mcp 3", journal.Rejected)}
	in := a.operationsJournaled(all)
	if got := strings.Join(in.Broken, "\n"); len(in.Broken) != 4 || !strings.Contains(got, `"chaos 1 mcp 1": 2 operations from 1`) ||
		!strings.Contains(got, "op-gone00") || strings.Count(got, "op-mmmmm2") != 2 {
		t.Errorf("MCP operations against the journal:\n%s", got)
	}

	committed := action.Result{Status: action.StatusSucceeded, SideEffect: action.SideEffectCommitted}
	stopped := action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop}
	pending := action.Result{Status: action.StatusPending, SideEffect: action.SideEffectPrepared}
	a.broken = []string{"op-live00 reported committed over MCP, and Telegram holds no \"x\""}
	a.views = map[string]action.Result{"op-v1": committed, "op-v2": stopped, "op-v3": pending, "op-v4": pending, "op-v5": stopped, "op-v6": committed}
	a.looked = map[string]bool{"op-v3": true} // op-v4's last look failed: its view is old
	ops := []journal.Operation{mcpOp("op-v1", "t1", journal.Unknown), mcpOp("op-v2", "t2", journal.Committed), mcpOp("op-v3", "t3", journal.Rejected),
		mcpOp("op-v4", "t4", journal.Rejected), mcpOp("op-v5", "t5", journal.Expired), mcpOp("op-v6", "t6", journal.Committed)}
	in = a.viewsHold(ops, map[string]int{"t2": 1, "t5": 1, "t6": 1})
	if got := strings.Join(in.Broken, "\n"); len(in.Broken) != 5 || !strings.Contains(got, "op-live00") || !strings.Contains(got, "op-v1:") ||
		!strings.Contains(got, "op-v2:") || !strings.Contains(got, "op-v3:") || !strings.Contains(got, "op-v5: the caller was told nothing was sent") {
		t.Errorf("MCP results against the journal:\n%s", got)
	}
}

// The checks of the mix catch what they name: a second effect under one key, an
// effect under a key that is no operation's, a second effect of one call
// without a key.
func TestActionInvariantsCatchBrokenPromises(t *testing.T) {
	api := fakeapi.New(t)
	api.IgnoreKeys = true // a service that breaks its word
	post := func(path, key string) {
		req, _ := http.NewRequest(http.MethodPost, api.URL+path, strings.NewReader(`{"note":"x"}`))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/keyed/a", "op-aaaaaa")
	post("/keyed/a", "op-aaaaaa")
	post("/keyed/b", "op-stray0")
	post("/plain/c", "")
	post("/plain/c", "")
	post("/plain/d", "")
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	w := &world{srv: srv, mix: &mix{api: api, original: map[[2]int64]string{}}}
	call := func(id, tool, path string, key bool) journal.Operation {
		return journal.Operation{ID: id, Tool: tool, State: journal.Committed,
			Payload: action.Payload{Action: action.HTTP, Request: &action.HTTPRequest{Method: "POST", URL: api.URL + path, IdempotencyKey: key}}}
	}
	ops := []journal.Operation{call("op-aaaaaa", httpKeyed, "/keyed/a", true), call("op-cccccc", httpPlain, "/plain/c", false), call("op-dddddd", httpPlain, "/plain/d", false)}
	if in := w.keyedOnce(ops); len(in.Broken) != 2 || !strings.Contains(strings.Join(in.Broken, "\n"), "op-stray0") {
		t.Errorf("effects under one key:\n%s", strings.Join(in.Broken, "\n"))
	}
	if in := w.additiveOnce(ops); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "/plain/c") {
		t.Errorf("effects without a key:\n%s", strings.Join(in.Broken, "\n"))
	}
}
