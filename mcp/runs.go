package mcp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Runs serves the tools to the agent CLIs the bot itself drives (Claude Code as
// the brain behind a chat), in the process that sends: on a loopback listener of
// its own, where every request must carry a bearer token that Bind made for one
// run, and every session runs its calls in that run's task, the chat's, under its
// requester, policy snapshot, budgets and loop guard. A token opens nothing once
// its run is over, and the sessions opened with it are closed then.
type Runs struct {
	srv *Server
	url string

	mu       sync.Mutex
	tokens   map[string]binding                     // bearer token -> its run
	sessions map[string]map[*sdk.ServerSession]bool // run id -> the sessions it opened, while it runs
}

// binding is what a run's token binds its sessions to.
type binding struct{ task, run string }

// ServeRuns listens on 127.0.0.1 (a port of the system's choosing) and serves
// until ctx ends.
func (s *Server) ServeRuns(ctx context.Context) (*Runs, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcp: runs: %w", err)
	}
	r := &Runs{srv: s, url: "http://" + ln.Addr().String() + "/mcp", tokens: map[string]binding{}, sessions: map[string]map[*sdk.ServerSession]bool{}}
	s.srv.AddReceivingMiddleware(r.track)
	hs := s.opts.HTTP.Server(s.guard(s.streamable(), r.verify), s.opts.Logger)
	go hs.Serve(ln)
	go func() {
		<-ctx.Done()
		hs.Close() // the runs end with the bot; their streams with them
	}()
	return r, nil
}

// URL is the endpoint a run's MCP configuration names.
func (r *Runs) URL() string { return r.url }

// Bind makes a bearer token that binds every session presenting it to task
// taskID, until release is called, which also closes the sessions opened with
// it: an agent CLI may leave its session open when its run ends. The token is
// for the run's configuration only: it is never logged.
func (r *Runs) Bind(taskID string) (token string, release func()) {
	token, run := random(32), random(8)
	r.mu.Lock()
	r.tokens[token] = binding{task: taskID, run: run}
	r.sessions[run] = map[*sdk.ServerSession]bool{}
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.tokens, token)
		sessions := r.sessions[run]
		delete(r.sessions, run)
		r.mu.Unlock()
		for ss := range sessions {
			go ss.Close() // Close waits for the session's calls in flight
		}
	}
}

func random(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// verify accepts a token Bind made and not yet released, carrying its task and run.
func (r *Runs) verify(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for token, b := range r.tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
			return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour), UserID: b.task,
				Extra: map[string]any{boundKey: b.task, runKey: b.run}}, nil
		}
	}
	return nil, auth.ErrInvalidToken
}

// track notes the session of every request a run's token carries, so that the
// run's release closes it.
func (r *Runs) track(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if run := boundValue(req.GetExtra(), runKey); run != "" {
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				r.mu.Lock()
				if sessions, live := r.sessions[run]; live {
					sessions[ss] = true
				}
				r.mu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// boundKey holds a bound session's task in its token's Extra; runKey its run.
const (
	boundKey = "countersign_task"
	runKey   = "countersign_run"
)

// boundTask is the task a request's token binds it to, "" for none.
func boundTask(extra *sdk.RequestExtra) string { return boundValue(extra, boundKey) }

func boundValue(extra *sdk.RequestExtra, key string) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	v, _ := extra.TokenInfo.Extra[key].(string)
	return v
}
