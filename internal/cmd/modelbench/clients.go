package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

const (
	requester = 7
	// apiKey is sent to the scripted server only.
	apiKey = "sk-ant-modelbench-0000"
)

// The models asked, and the fallback of the burst.
var (
	models    = map[string]string{agenttest.Anthropic: model.DefaultAnthropicModel, agenttest.OpenAI: "gpt-4o"}
	fallbacks = map[string]string{agenttest.Anthropic: "claude-haiku-4-5", agenttest.OpenAI: "gpt-4o-mini"}
)

// rig is what a client's tools run on: a journal in a temporary folder and the
// operator over it, with the policy's tools and the console's printer as the
// sender (prepare_reply sends nothing).
type rig struct {
	dir string
	j   *journal.Journal
	op  *operator.Operator
	reg *tools.Registry
}

func newRig(ctx context.Context, p *policy.Policy) (*rig, error) {
	dir, err := os.MkdirTemp("", "modelbench")
	if err != nil {
		return nil, err
	}
	r := &rig{dir: dir}
	if r.j, err = journal.Open(ctx, filepath.Join(dir, "journal.db"), journal.WithSeenKey(operator.SeenKey)); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if r.reg, err = tools.NewRegistry(p, console.NewPrinter(io.Discard)); err != nil {
		r.close()
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if r.op, err = operator.New(operator.Options{Journal: r.j, Tools: r.reg, Policy: p, Logger: quiet, Transport: "telegram"}); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

func (r *rig) close() {
	r.j.Close()
	os.RemoveAll(r.dir)
}

// toolRuns is how many times the tool ran in a task: its prepare_reply
// operations in the journal.
func (r *rig) toolRuns(ctx context.Context, taskID string) (int, error) {
	ops, err := r.j.Operations(ctx, journal.Filter{TaskID: taskID})
	n := 0
	for _, o := range ops {
		if o.Tool == "prepare_reply" {
			n++
		}
	}
	return n, err
}

// client runs turn n as the task taskID: done is whether it ended with the final
// answer; how is its end, for the report.
type client func(ctx context.Context, taskID string, n int) (done bool, how string, err error)

// newProvider is the provider of kind asking the server at url.
func newProvider(kind, url string, timeout time.Duration) model.Streamer {
	if kind == agenttest.OpenAI {
		return model.NewOpenAI(apiKey, url+"/v1/", model.WithRequestTimeout(timeout))
	}
	return model.NewAnthropic(apiKey, url, model.WithRequestTimeout(timeout))
}

// steps keeps what the watch and the recovery did, for the report.
type steps struct {
	mu    sync.Mutex
	count map[model.Action]int
}

func (s *steps) observe(st model.Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == nil {
		s.count = map[model.Action]int{}
	}
	s.count[st.Action]++
}

func (s *steps) of(a model.Action) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[a]
}

// countersign is the agent loop as the bot composes it (cmd/bot newModel): the
// provider streamed under a Watch, behind Recovery, the turn's recovery and
// budgets from the task's policy snapshot.
func countersign(r *rig, kind, url string, t timing, seen *steps) client {
	watched := model.NewWatch(newProvider(kind, url, t.requestTimeout()), model.DefaultStallWarning, model.DefaultStallAbort, seen.observe)
	rec := model.NewRecovery(watched, model.DefaultPolicy(), model.WithObserver(seen.observe))
	loop := agent.NewLoop(rec, models[kind], r.op, r.reg, agent.LoopLimits{}, nil)
	return func(ctx context.Context, taskID string, n int) (bool, string, error) {
		out, err := loop.Turn(ctx, taskID, turnText(n))
		if err != nil {
			return false, "", err
		}
		how := out.End
		if d := out.Path[len(out.Path)-1].Detail; d != "" {
			how += ": " + d
		}
		return out.End == agent.EndCompleted, how, nil
	}
}

// The naive loop's limits: what a careful user without a recovery layer writes.
const (
	naiveRetries = 3 // immediate retries of a failed request
	naiveRuns    = 3 // runs of the whole turn
)

// naiveLoop is the loop a careful but naive user writes over the same provider,
// plain requests with the same timeout: a request that fails (an error, or a reply
// cut at max_tokens) is retried at once, up to naiveRetries times; when it still
// fails, the whole turn runs again, the tool included, up to naiveRuns times.
type naiveLoop struct {
	r     *rig
	p     model.Provider
	model string
	specs []model.ToolSpec
}

func naive(r *rig, kind, url string, t timing) client {
	l := &naiveLoop{r: r, p: newProvider(kind, url, t.requestTimeout()), model: models[kind]}
	for _, name := range r.reg.Names() {
		tool, _ := r.reg.Get(name)
		ps := tool.Params()
		l.specs = append(l.specs, model.ToolSpec{Name: name, Description: tool.Description(), Properties: ps.Properties, Required: ps.Required})
	}
	return l.turn
}

func (l *naiveLoop) turn(ctx context.Context, taskID string, n int) (bool, string, error) {
	how := ""
	for run := 1; run <= naiveRuns; run++ {
		msgs := []model.Message{{Role: model.RoleUser, Text: turnText(n)}}
		res, err := l.ask(ctx, msgs)
		if err != nil {
			how = fmt.Sprintf("run %d, tool call: %v", run, err)
			continue
		}
		results, err := l.runTools(ctx, taskID, res.ToolCalls)
		if err != nil {
			return false, "", err
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls}, results)
		if _, err := l.ask(ctx, msgs); err != nil {
			how = fmt.Sprintf("run %d, final answer: %v", run, err)
			continue
		}
		return true, fmt.Sprintf("completed in run %d", run), nil
	}
	return false, "gave up: " + how, nil
}

// ask makes the request, retrying at once what failed.
func (l *naiveLoop) ask(ctx context.Context, msgs []model.Message) (model.Response, error) {
	var err error
	for try := 0; try <= naiveRetries; try++ {
		var res model.Response
		res, err = l.p.Complete(ctx, model.Request{Model: l.model, Messages: msgs, Tools: l.specs, MaxTokens: 8192})
		switch {
		case err == nil && (res.Stop == model.StopToolUse || res.Stop == model.StopEndTurn):
			return res, nil
		case err == nil:
			err = fmt.Errorf("stopped for %s", res.Stop)
		}
	}
	return model.Response{}, err
}

// runTools runs every call through the operator, as the tool runs for the agent
// loop, and answers each with its result.
func (l *naiveLoop) runTools(ctx context.Context, taskID string, calls []model.ToolCall) (model.Message, error) {
	results := model.Message{Role: model.RoleTool}
	for _, c := range calls {
		out, err := l.r.op.Call(ctx, taskID, operator.Call{Tool: c.Name, Args: c.Input})
		if err != nil && !errors.Is(err, operator.ErrUnknownTool) {
			return model.Message{}, err
		}
		data, err := json.Marshal(out)
		if err != nil {
			return model.Message{}, err
		}
		results.ToolResults = append(results.ToolResults, model.ToolResult{CallID: c.ID, Content: string(data)})
	}
	return results, nil
}
