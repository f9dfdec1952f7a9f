package mcp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/mcp"
)

// Over HTTP with a token, a request without it, or with another, gets 401 and
// reaches nothing; the right one is served; the token is in no log line.
func TestTheBearerTokenIsRequiredAndNeverLogged(t *testing.T) {
	r := newRig(t, nil)
	hs := httptest.NewServer(r.srv.Handler(bearer))
	defer hs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	for _, tt := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"another token", "Bearer not-" + bearer, http.StatusUnauthorized},
		{"not bearer", "Basic " + bearer, http.StatusUnauthorized},
		{"the token", "Bearer " + bearer, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
	cs := r.connect(t, "http", nil)
	call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "asked over HTTP"})
	if strings.Contains(r.logs.String(), bearer) {
		t.Errorf("the bearer token is in the log:\n%s", r.logs)
	}
}

// Off loopback, a token is required; on loopback it is not.
func TestCheckListen(t *testing.T) {
	for _, tt := range []struct {
		addr, token string
		err         error
	}{
		{"127.0.0.1:8765", "", nil},
		{"[::1]:8765", "", nil},
		{"localhost:8765", "", nil},
		{"0.0.0.0:8765", "", mcp.ErrTokenRequired},
		{":8765", "", mcp.ErrTokenRequired},
		{"192.168.1.5:8765", "", mcp.ErrTokenRequired},
		{":8765", "s3cret", nil},
	} {
		if err := mcp.CheckListen(tt.addr, tt.token); !errors.Is(err, tt.err) {
			t.Errorf("CheckListen(%q, token %v) = %v, want %v", tt.addr, tt.token != "", err, tt.err)
		}
	}
	if err := mcp.CheckListen("no-port", ""); err == nil {
		t.Error("an address without a port was accepted")
	}
}
