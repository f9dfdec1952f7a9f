// Package fakeapi is an HTTP service for tests of declared HTTP tools: it
// applies effects, counts them, and misbehaves on request as real services do
// (an answer lost after the effect is applied, 429 with Retry-After, 503, an
// answer that never comes, a redirect elsewhere). Tests assert what reached it:
// "exactly one effect", "the key was the operation id", "no second request".
//
// Every request that is not a GET applies an effect, and is answered 201 with
// {"id": "T-n", "key": "<its Idempotency-Key>"}, unless a step scripted for its
// path says otherwise. When the server honours keys (the default), a request
// whose Idempotency-Key was seen before applies nothing and gets the first
// answer again. A GET of /by-key/{key} answers 200 with the effect made under
// that key, or 404; a GET of any other path answers 200 with the last effect
// made at that path, or 404: the reconcile reads of a declaration.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Mode is how the server answers one request.
type Mode int

// The modes of a step.
const (
	// Answer applies the effect (or finds it by key) and answers 201.
	Answer Mode = iota
	// LoseAnswer applies the effect, then closes the connection without a
	// word: the caller cannot know it landed.
	LoseAnswer
	// TooMany answers 429 with the step's RetryAfter, applying nothing.
	TooMany
	// Unavailable answers 503 (with the step's RetryAfter, when set),
	// applying nothing.
	Unavailable
	// Hang applies the effect and never answers, until the caller gives up.
	Hang
	// Redirect answers 307 to the step's Location, applying nothing.
	Redirect
	// Status answers the step's Status with the step's Body, applying nothing.
	Status
	// LoseRequest closes the connection once the request is read, applying
	// nothing: the caller cannot know it did not land.
	LoseRequest
)

// Step is the answer to one request.
type Step struct {
	Mode       Mode
	RetryAfter string // TooMany, Unavailable: the Retry-After header
	Location   string // Redirect
	Status     int    // Status
	Body       string // Status
}

// Request is one request as the server received it.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// Effect is one change the server made.
type Effect struct {
	ID, Key, Path, Body string
}

// Server is the fake service. Its URL is plain http on 127.0.0.1.
type Server struct {
	URL string
	// IgnoreKeys makes every request a new effect, whatever its key.
	IgnoreKeys bool

	srv      *httptest.Server
	done     chan struct{}
	closing  sync.Once
	mu       sync.Mutex
	steps    map[string][]Step
	requests []Request
	effects  []Effect
	byKey    map[string]Effect
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test (a chaos run); Close ends it.
func Start() *Server {
	s := &Server{done: make(chan struct{}), steps: map[string][]Step{}, byKey: map[string]Effect{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close ends the server, and the answers still hanging with it.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.done) // ends the hanging answers, so Close does not wait on them
		s.srv.Close()
	})
}

// Script makes the next requests to path (one each) answer as steps say;
// requests past them are answered normally.
func (s *Server) Script(path string, steps ...Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps[path] = append(s.steps[path], steps...)
}

// Requests are the requests received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Effects are the effects made, in order.
func (s *Server) Effects() []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), s.effects...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: string(body)})
	step := Step{Mode: Answer}
	if q := s.steps[r.URL.EscapedPath()]; len(q) > 0 {
		step, s.steps[r.URL.EscapedPath()] = q[0], q[1:]
	}
	s.mu.Unlock()
	switch step.Mode {
	case TooMany, Unavailable:
		if step.RetryAfter != "" {
			w.Header().Set("Retry-After", step.RetryAfter)
		}
		code := http.StatusTooManyRequests
		if step.Mode == Unavailable {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, `{"error":"try later"}`, code)
		return
	case Redirect:
		http.Redirect(w, r, step.Location, http.StatusTemporaryRedirect)
		return
	case Status:
		w.WriteHeader(step.Status)
		io.WriteString(w, step.Body)
		return
	case LoseRequest:
		hangUp(w)
		return
	}
	if r.Method == http.MethodGet {
		s.read(w, r)
		return
	}
	e := s.apply(r, string(body))
	switch step.Mode {
	case LoseAnswer:
		hangUp(w)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	answer(w, http.StatusCreated, e)
}

// apply makes the effect of r, or finds the one made under its key.
func (s *Server) apply(r *http.Request, body string) Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	if e, ok := s.byKey[key]; ok && key != "" && !s.IgnoreKeys {
		return e
	}
	e := Effect{ID: fmt.Sprintf("T-%d", len(s.effects)+1), Key: key, Path: r.URL.EscapedPath(), Body: body}
	s.effects = append(s.effects, e)
	if key != "" {
		s.byKey[key] = e
	}
	return e
}

// read answers a GET: the effect made under a key, or the last one at a path.
func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var found *Effect
	if key, ok := strings.CutPrefix(r.URL.Path, "/by-key/"); ok {
		if e, ok := s.byKey[key]; ok {
			found = &e
		}
	} else {
		for i := range s.effects {
			if s.effects[i].Path == r.URL.EscapedPath() {
				found = &s.effects[i]
			}
		}
	}
	s.mu.Unlock()
	if found == nil {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	answer(w, http.StatusOK, *found)
}

func answer(w http.ResponseWriter, code int, e Effect) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"id": e.ID, "key": e.Key})
}

// hangUp closes the connection w answers on without a word.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}
