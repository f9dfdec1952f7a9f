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
// its run is over.
type Runs struct {
	srv *Server
	url string

	mu     sync.Mutex
	tokens map[string]string // bearer token -> task id
}

// ServeRuns listens on 127.0.0.1 (a port of the system's choosing) and serves
// until ctx ends.
func (s *Server) ServeRuns(ctx context.Context) (*Runs, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mcp: runs: %w", err)
	}
	r := &Runs{srv: s, url: "http://" + ln.Addr().String() + "/mcp", tokens: map[string]string{}}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{Logger: s.opts.Logger})
	hs := &http.Server{Handler: auth.RequireBearerToken(r.verify, nil)(h), ReadHeaderTimeout: 10 * time.Second}
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
// taskID, until release is called. The token is for the run's configuration
// only: it is never logged.
func (r *Runs) Bind(taskID string) (token string, release func()) {
	b := make([]byte, 32)
	rand.Read(b)
	token = hex.EncodeToString(b)
	r.mu.Lock()
	r.tokens[token] = taskID
	r.mu.Unlock()
	return token, func() {
		r.mu.Lock()
		delete(r.tokens, token)
		r.mu.Unlock()
	}
}

// verify accepts a token Bind made and not yet released, carrying its task.
func (r *Runs) verify(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for token, task := range r.tokens {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
			return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour), UserID: task, Extra: map[string]any{boundKey: task}}, nil
		}
	}
	return nil, auth.ErrInvalidToken
}

// boundKey holds a bound session's task in its token's Extra.
const boundKey = "countersign_task"

// boundTask is the task a request's token binds it to, "" for none.
func boundTask(extra *sdk.RequestExtra) string {
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	task, _ := extra.TokenInfo.Extra[boundKey].(string)
	return task
}
