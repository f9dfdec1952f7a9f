// Package agenttest is a scripted model server for tests. One Server speaks the
// wire formats the model layer and the agent CLIs use, over real HTTP:
// Anthropic's Messages API (POST /v1/messages, as Claude Code also speaks it),
// the Chat Completions API of OpenAI-compatible servers (POST
// /v1/chat/completions, or /chat/completions for a base URL without /v1), and
// OpenAI's Responses API as Codex speaks it (POST /v1/responses), each plain or
// streamed as the request asks ("stream": true).
//
// A reply is scripted once, in neither format (Message: text, tool calls, a stop
// reason; Fail: a failure), and rendered in the format of the request it answers,
// with the status, headers and error bodies recorded from the real services. Its
// delivery can go wrong as real deliveries do: a hang before the headers, a stall
// (with or without pings), an error event inside the stream, a stream cut short,
// a connection dropped in the middle of the body. The server records every request
// (its format, model, output limit, whether it streamed, when it came), so that a
// test can check what a client did, not only what it returned.
package agenttest

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The wire formats, named as the agent package names its providers; Responses
// is the one Codex speaks.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Responses = "responses"
)

// Request is one request the server received.
type Request struct {
	// N counts the requests from 1; At is when this one arrived.
	N  int
	At time.Time
	// Format is Anthropic, OpenAI or Responses, from the path; "" for a path
	// none of them has.
	Format string
	Path   string
	Header http.Header
	Body   []byte
	// Streamed, Model and MaxTokens are read from the body (MaxTokens from
	// max_tokens, else max_completion_tokens or max_output_tokens; 0 when none
	// is there).
	Streamed  bool
	Model     string
	MaxTokens int
	// Messages counts the body's messages, system and developer messages not
	// included (OpenAI carries the system prompt as one; Anthropic beside them,
	// though Claude Code also puts role "system" entries among them; Codex sends
	// developer messages in the Responses API's input).
	Messages int
	// Tools are the names of the tools the request offers, in its order; a tool
	// in a Responses namespace is named namespace__name
	// (mcp__countersign__commit_send_message), as Claude Code names it.
	Tools []string
	// Results are the tool results the request carries back, in order: the
	// last one answers the call of the previous reply.
	Results []ToolResult

	usage      bool                 // stream_options.include_usage
	turn       int                  // the assistant's turn that answers it: its assistant messages + 1
	namespaces map[string][2]string // a namespaced tool's flat name: its namespace and name
}

// Server is the scripted model server. Point a provider's base URL at URL (an
// OpenAI provider's at URL or URL+"/v1").
type Server struct {
	*httptest.Server
	answer   func(Request) Reply
	done     chan struct{}
	closing  sync.Once
	mu       sync.Mutex
	requests []Request
}

// NewServer starts a server answering the requests with replies in order (the
// last one repeats); it closes with the test.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("agenttest: no replies")
	}
	return NewServerFunc(t, func(r Request) Reply { return replies[min(r.N, len(replies))-1] })
}

// NewServerFunc starts a server answering each request with answer(req), for a
// script that depends on the request (its number N, its format, its model). It
// closes with the test; answer may be called from several goroutines at once.
func NewServerFunc(t testing.TB, answer func(Request) Reply) *Server {
	t.Helper()
	s := Start(answer)
	t.Cleanup(s.Close)
	return s
}

// Start starts a server answering each request with answer(req), as NewServerFunc
// does, for a program that is not a test (a benchmark). Call Close when done.
func Start(answer func(Request) Reply) *Server {
	s := &Server{answer: answer, done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Close ends every stall and hang, so that it need not wait for them, then shuts
// the server down. Calling it again does nothing.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.done)
		s.Server.Close()
	})
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Gaps returns the time between each request and the one before it: the waits
// the client left between them.
func (s *Server) Gaps() []time.Duration {
	reqs := s.Requests()
	var gaps []time.Duration
	for i := 1; i < len(reqs); i++ {
		gaps = append(gaps, reqs[i].At.Sub(reqs[i-1].At))
	}
	return gaps
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	req := s.record(r)
	if req.Format == "" {
		http.Error(w, `{"error":{"type":"not_found_error","message":"agenttest: no such endpoint"}}`, http.StatusNotFound)
		return
	}
	rep := s.answer(req)
	if rep.trouble.hang.on && !s.pause(r.Context(), rep.trouble.hangFor) {
		return
	}
	res, err := rep.render(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.write(w, r, res, rep)
}

// formatOf is the format of the API at path.
func formatOf(path string) string {
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return Anthropic
	case strings.HasSuffix(path, "/chat/completions"):
		return OpenAI
	case isResponsesPath(path):
		return Responses
	}
	return ""
}

// record keeps the request and returns it.
func (s *Server) record(r *http.Request) Request {
	body, _ := io.ReadAll(r.Body)
	var head struct {
		Model               string `json:"model"`
		MaxTokens           int    `json:"max_tokens"`
		MaxCompletionTokens int    `json:"max_completion_tokens"`
		MaxOutputTokens     int    `json:"max_output_tokens"`
		Stream              bool   `json:"stream"`
		StreamOptions       struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []wireMessage   `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
		Input    []responsesItem `json:"input"`
	}
	json.Unmarshal(body, &head) // a body that is not JSON is recorded with its fields empty
	req := Request{At: time.Now(), Format: formatOf(r.URL.Path), Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
		Streamed: head.Stream, Model: head.Model, MaxTokens: head.MaxTokens, usage: head.StreamOptions.IncludeUsage}
	req.MaxTokens = cmp.Or(req.MaxTokens, head.MaxCompletionTokens, head.MaxOutputTokens)
	if req.Format == Responses {
		var tools []responsesTool
		json.Unmarshal(head.Tools, &tools)
		readResponses(&req, head.Input, tools)
		return s.keep(req)
	}
	for _, m := range head.Messages {
		if m.Role != "system" && m.Role != "developer" {
			req.Messages++
		}
		req.Results = append(req.Results, m.results()...)
		if m.Role == "assistant" {
			req.turn++
		}
	}
	var tools []wireTool
	json.Unmarshal(head.Tools, &tools)
	for _, t := range tools {
		req.Tools = append(req.Tools, t.name())
	}
	return s.keep(req)
}

// keep numbers req and records it.
func (s *Server) keep(req Request) Request {
	req.turn++
	s.mu.Lock()
	defer s.mu.Unlock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, req)
	return req
}

// pause waits d (0: until the client goes away) and reports whether it ran to
// its end: false when the client went away or the server is closing.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	var end <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		end = t.C
	}
	select {
	case <-end:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}
