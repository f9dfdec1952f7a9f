// Package mcp offers the policy's tools to outside agents (Claude Code, Codex, any
// MCP client) over the Model Context Protocol, with the follow-up session's
// read-only tools and the vault's envelopes as resources. It is a surface, like
// telegram and console: every call goes through the operator (journal, verifier,
// approval on the phone, loop guard, budgets), and nothing here decides or
// resolves; a person does, from Telegram.
//
// One MCP session is one task: its first call starts the task (Surface "mcp", no
// chat, requester 0, the policy in force), and every later call of the session
// runs in it, under its snapshot, budgets and loop guard.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// Name is the server's name: clients know its tools as mcp__countersign__<tool>.
const Name = "countersign"

// Surface is recorded on the tasks and operations made over MCP.
const Surface = "mcp"

// Instructions tell the agent what the three words it must act on mean.
const Instructions = `Every commit_* call returns status "pending" with an operation_id at once, because a person approves the exact payload on their phone; follow it with await_outcome (a bounded wait: call it again while it stays pending) or get_operation. ` +
	`side_effect "unknown" with next_action "verify" means the message may or may not have arrived: never call the tool again for it, call request_verification to ask the approvers to check, and read its envelope at countersign://envelopes/{operation_id}. ` +
	`Only a person resolves an unknown outcome, and a call repeated after it was refused stops as a possible doom loop.`

// ErrNoApprovers refuses to start a server whose commits nobody could approve:
// every commit would wait for a tap that cannot come until it expired.
var ErrNoApprovers = errors.New("mcp: the policy has no approvers (set access.approvers or BOT_APPROVERS): every commit would wait for a tap nobody can give")

// Options are the server's dependencies. Operator, Journal, Vault, Tools and
// Policy are required.
type Options struct {
	Operator *operator.Operator
	Journal  *journal.Journal
	Vault    *vault.Vault
	Tools    *tools.Registry // the policy's tools, as the operator has them
	Policy   *policy.Policy  // the policy in force, for its approvers
	// Owner says whether a live process delivers the operations made here, and
	// which: a stdio `countersign mcp` beside a bot asks the journal (journal.Owner). Nil
	// means this process delivers them (`countersign run -mcp-listen`).
	Owner func() (pid int, owned bool, err error)
	// Version is the server's version in its Implementation.
	Version string
	Logger  *slog.Logger // nil: slog.Default()
	// HTTP bounds each connection of the HTTP listeners (Serve, ServeRuns);
	// zero fields take httpserve.Default, the webhook's.
	HTTP httpserve.Limits
	// SessionIdle closes a streamable HTTP session that no request used for
	// this long (default DefaultSessionIdle).
	SessionIdle time.Duration
	// MaxAwait bounds one await_outcome (default MaxAwait); tests shorten it.
	MaxAwait time.Duration
	// PollEvery is how often a wait reads the journal (default 200ms); WatchEvery
	// how often Watch lists the vault (default 2s).
	PollEvery, WatchEvery time.Duration
	// NoteWait bounds how long a read of an unknown outcome's envelope waits
	// for the note the sending process writes just after the outcome (default 5s).
	NoteWait time.Duration
}

// Server is the MCP server over one operator. It is safe for concurrent use by
// many sessions.
type Server struct {
	opts Options
	srv  *sdk.Server

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
	listed   map[string]bool // the envelopes offered as resources, by operation id
}

// session is one MCP session's task, started by its first call.
type session struct {
	mu     sync.Mutex // held while the task is being started, so a session has one
	task   string
	client string
}

// New returns the server, with the policy's tools and the follow-up tools. It
// returns ErrNoApprovers when the policy has none.
func New(o Options) (*Server, error) {
	if o.Operator == nil || o.Journal == nil || o.Vault == nil || o.Tools == nil || o.Policy == nil {
		return nil, errors.New("mcp: Operator, Journal, Vault, Tools and Policy are required")
	}
	if len(o.Policy.Access.Approvers) == 0 {
		return nil, ErrNoApprovers
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 200 * time.Millisecond
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxAwait <= 0 {
		o.MaxAwait = MaxAwait
	}
	if o.NoteWait <= 0 {
		o.NoteWait = 5 * time.Second
	}
	if o.WatchEvery <= 0 {
		o.WatchEvery = 2 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := &Server{opts: o, sessions: map[*sdk.ServerSession]*session{}, listed: map[string]bool{}}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: Name, Title: "Countersign", Version: o.Version},
		&sdk.ServerOptions{Instructions: Instructions, Logger: o.Logger})
	s.addPolicyTools()
	s.addFollowUpTools()
	s.addEnvelopes()
	return s, nil
}

// Connect serves one session over t (stdio, in-memory) until it ends; Wait on
// the session it returns. Watch keeps its resource list current.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.srv.Connect(ctx, t, nil)
}

// Run serves one session over t until it ends or ctx does, watching the vault
// meanwhile: the stdio `countersign mcp`.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Watch(ctx)
	return s.srv.Run(ctx, t)
}

// session returns the state of req's session, made on its first call and
// named after the client; it is dropped when the session ends.
func (s *Server) session(req *sdk.CallToolRequest) *session {
	ss := req.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[ss]
	if ok {
		return se
	}
	se = &session{client: "client"}
	if c := req.ClientInfo(); c != nil && c.Name != "" {
		se.client = c.Name
	}
	// The session's id, short, tells two sessions of one client apart on a
	// card (stdio has one session and no id).
	if id := ss.ID(); id != "" {
		se.client += " (session " + id[:min(len(id), 8)] + ")"
	}
	s.sessions[ss] = se
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
	}()
	return se
}

// call runs one tool call in the session's task, starting the task with it when
// it is the session's first. A session whose bearer token is bound to a task
// (Runs.Bind) runs in that one.
func (s *Server) call(ctx context.Context, req *sdk.CallToolRequest, c operator.Call) (action.Result, error) {
	se := s.session(req)
	se.mu.Lock()
	if se.task == "" {
		se.task = boundTask(req.Extra)
	}
	if se.task != "" {
		id := se.task
		se.mu.Unlock()
		return s.opts.Operator.Call(ctx, id, c)
	}
	defer se.mu.Unlock()
	task, r, err := s.opts.Operator.Begin(ctx, journal.Task{Surface: Surface, Summary: "MCP session of " + se.client}, c)
	if task.ID != "" {
		se.task = task.ID
	}
	return r, err
}

// delivering says why nothing would deliver an operation made now, or "" when a
// process does: the owner of the transport, this one or a bot beside it.
func (s *Server) delivering() string {
	if s.opts.Owner == nil {
		return ""
	}
	_, owned, err := s.opts.Owner()
	switch {
	case err != nil:
		return fmt.Sprintf("whether a bot is running could not be read (%v)", err)
	case !owned:
		return "no bot is running on this data folder, so nothing would show its card or send it"
	}
	return ""
}

// noBot is what `countersign mcp` says at start, and a commit's result says, when no bot
// runs beside it.
func noBot(why string) string {
	return "Known: " + why + "; nothing was created. To do: start `countersign run` on the same -data folder, then call again."
}

// Check reports, at start, what a person must know before an agent calls: that
// no bot runs beside this server. It is "" when one does.
func (s *Server) Check() string {
	if why := s.delivering(); why != "" {
		return noBot(why)
	}
	return ""
}
