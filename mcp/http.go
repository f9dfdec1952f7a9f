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

// Handler serves the streamable HTTP transport (any path), every session on this
// server. With a token, a request without "Authorization: Bearer <token>" gets
// 401 and reaches nothing. The token is compared in constant time and never
// logged.
func (s *Server) Handler(token string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{Logger: s.opts.Logger})
	if token == "" {
		return h
	}
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	return auth.RequireBearerToken(verify, nil)(h)
}

// Serve serves Handler(token) on ln until ctx ends, watching the vault
// meanwhile, then shuts down, giving calls in flight (an await) 5 s to end.
func (s *Server) Serve(ctx context.Context, ln net.Listener, token string) error {
	hs := &http.Server{Handler: s.Handler(token), ReadHeaderTimeout: 10 * time.Second}
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
