package mcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/internal/httpserve"
)

// ErrTokenRequired refuses to serve MCP beyond this machine without a bearer
// token: anyone who reaches the port could ask for sends and read the vault.
var ErrTokenRequired = errors.New("mcp: a listen address that is not loopback needs a bearer token (COUNTERSIGN_MCP_TOKEN)")

// CheckListen reports whether addr may be served with token: any address with a
// token, a loopback one (127.0.0.1, ::1, localhost) without.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mcp: listen address %q: %w", addr, err)
	}
	if token != "" || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return ErrTokenRequired
}

// DefaultSessionIdle is how long a streamable HTTP session may go without a
// request before it is closed: far longer than any one wait (MaxAwait) or a
// person's usual time to tap, so that an agent following its operations keeps
// its session (its task, budgets and loop guard), while a client that left
// without saying so (Claude Code leaves its session open after each run) holds
// no goroutine and no memory for long. A client whose session was closed gets
// 404 and starts a new one.
const DefaultSessionIdle = 30 * time.Minute

// Handler serves the streamable HTTP transport (any path), every session on this
// server. With a token, a request without "Authorization: Bearer <token>" gets
// 401, reaches nothing, and its connection is closed. The token is compared in
// constant time and never logged.
func (s *Server) Handler(token string) http.Handler {
	if token == "" {
		return s.guard(s.streamable(), nil)
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	return s.guard(s.streamable(), verify)
}

// streamable is the SDK's handler of the streamable HTTP transport, closing
// idle sessions.
func (s *Server) streamable() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.opts.Logger, SessionTimeout: s.opts.SessionIdle})
}

// guard serves h to the requests verify accepts (all of them when it is nil).
// Those are trusted with the length of their answers: a wait of up to MaxAwait,
// a commit the system retries, an event stream for as long as its session
// lives, none of which Limits.Write may cut. Any other is answered 401 and its
// connection closed, so that it holds nothing after its answer.
func (s *Server) guard(h http.Handler, verify auth.TokenVerifier) http.Handler {
	allowed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Del("Connection")
		httpserve.Hold(w, 0)
		h.ServeHTTP(w, r)
	})
	if verify == nil {
		return allowed
	}
	checked := auth.RequireBearerToken(verify, nil)(allowed)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // kept only once the token is checked
		checked.ServeHTTP(w, r)
	})
}

// Serve serves Handler(token) on ln under Options.HTTP until ctx ends, watching
// the vault meanwhile, then shuts down, giving calls in flight (an await) 5 s to
// end.
func (s *Server) Serve(ctx context.Context, ln net.Listener, token string) error {
	hs := s.opts.HTTP.Server(s.Handler(token), s.opts.Logger)
	go s.Watch(ctx)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("mcp: serve: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if hs.Shutdown(stop) != nil {
		hs.Close() // a client's event stream stays open: close it
	}
	return nil
}
