package mcp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
)

// A session nobody uses is closed after the idle limit (shortened here): the
// server holds it no more, and a call on it is refused.
func TestAnIdleSessionIsClosed(t *testing.T) {
	t.Parallel()
	r := newRigOpts(t, nil, func(o *mcp.Options) { o.SessionIdle = 300 * time.Millisecond })
	cs := r.connect(t, "http", nil)
	call(t, cs, "list_pending", nil)
	waitUntil(t, "the idle session closed", func() bool { return mcp.OpenSessions(r.srv) == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_pending"}); err == nil {
		t.Error("a call on the closed session was served")
	}
}

// When a run is over (its token released), the sessions it opened are closed at
// once: an agent CLI that leaves its session open after each run leaks nothing.
func TestARunsSessionsCloseWithIt(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs, err := r.srv.ServeRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	task, err := r.op.StartTask(ctx, journal.Task{Requester: alice, Chat: "100", Summary: "chat", Surface: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	before := mcp.OpenSessions(r.srv)
	var releases []func()
	for range 3 {
		token, release := runs.Bind(task.ID)
		releases = append(releases, release)
		tr := &sdk.StreamableClientTransport{Endpoint: runs.URL(), HTTPClient: &http.Client{Transport: bearerAuth{token}}, MaxRetries: -1}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code", Version: "v0"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		call(t, cs, "list_pending", nil)
	}
	// A client's connect may leave a session of its own being torn down for a
	// moment: the count is waited for, not read once.
	waitUntil(t, "the three runs' sessions open", func() bool { return mcp.OpenSessions(r.srv) == before+3 })
	releases[0]()
	waitUntil(t, "the released run's session closed", func() bool { return mcp.OpenSessions(r.srv) == before+2 })
	releases[1]()
	releases[2]()
	waitUntil(t, "every run's session closed", func() bool { return mcp.OpenSessions(r.srv) == before })
}
