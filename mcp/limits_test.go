package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/mcp"
)

// shortLimits let a test watch connections being cut within its deadline; Write
// is shorter than a wait the test makes, which it must not cut.
var shortLimits = httpserve.Limits{Header: 200 * time.Millisecond, Read: 500 * time.Millisecond,
	Write: 300 * time.Millisecond, Idle: 3 * time.Second, MaxHeaderBytes: 4 << 10}

// serveListener serves the rig's server as countersign run -mcp-listen does, on a
// loopback port, with the bearer token; it returns the address.
func serveListener(t *testing.T, r *rig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.srv.Serve(ctx, ln, bearer) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// dial opens a raw connection and writes what is given.
func dial(t *testing.T, addr, write string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, write); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reads c until the server closes it and returns what it sent,
// failing the test if the connection is still open after d.
func closedWithin(t *testing.T, what string, c net.Conn, d time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: the server still holds the connection after %v (read so far %q)", what, d, got)
	}
	return string(got)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func post(auth, body string, length int) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		auth, length, body)
}

// The MCP listener holds no connection for a client that sends slowly, sends
// no token, or says nothing: the limits the webhook has, from one place.
// A client with the token is not cut in a wait longer than the write limit.
func TestTheMCPListenerCutsSlowAndUnknownClients(t *testing.T) {
	t.Parallel()
	r := newRigOpts(t, nil, func(o *mcp.Options) { o.HTTP = shortLimits })
	addr := serveListener(t, r)
	auth := "Authorization: Bearer " + bearer + "\r\n"
	for _, tt := range []struct {
		name, send string
		within     time.Duration
		want       string // the answer's status line, "" for none
	}{
		{"half a header", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty", 2 * time.Second, ""},
		{"no token, a body that never comes", post("", `{"jsonrpc":`, 400), time.Second, "HTTP/1.1 401 "},
		{"no token, then nothing", post("", initialize, len(initialize)), time.Second, "HTTP/1.1 401 "},
		{"the token, a body that never comes", post(auth, `{"jsonrpc":`, 400), 2 * time.Second, ""},
		{"the token, then idle", post(auth, initialize, len(initialize)), 6 * time.Second, "HTTP/1.1 200 "},
		{"headers over the cap", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 2 * time.Second, "HTTP/1.1 431 "},
	} {
		got := closedWithin(t, tt.name, dial(t, addr, tt.send), tt.within)
		if tt.want == "" && strings.Contains(got, " 200 ") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: answered %.60q, want %q", tt.name, got, tt.want)
		}
	}

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: bearerAuth{bearer}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "left waiting"})
	start := time.Now()
	res, got := call(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 1})
	if took := time.Since(start); res.IsError || got.Status != action.StatusPending || took < time.Second {
		t.Errorf("a 1 s wait over a %s write limit = %+v after %s, want pending after 1 s", shortLimits.Write, got, took)
	}
}
