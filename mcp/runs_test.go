package mcp_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
)

// A run's bearer token binds its session to the task it was made for: a commit
// made over it is an operation of that task (the chat's requester and chat),
// not of a task of its own; a released token, or none, opens nothing.
func TestRunsBindASessionToItsTask(t *testing.T) {
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
	token, release := runs.Bind(task.ID)
	connect := func(token string) (*sdk.ClientSession, error) {
		tr := &sdk.StreamableClientTransport{Endpoint: runs.URL(), HTTPClient: &http.Client{Transport: bearerAuth{token}}, MaxRetries: -1}
		return sdk.NewClient(&sdk.Implementation{Name: "claude-code", Version: "v0"}, nil).Connect(ctx, tr, nil)
	}
	cs, err := connect(token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range append([]string{"commit_send_message", "commit_publish_post", "prepare_reply"}, mcp.FollowUpTools...) {
		if !slices.Contains(names, want) {
			t.Errorf("the tools %v lack %s, which a run is allowed", names, want)
		}
	}
	_, first := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "one"})
	_, second := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "two"})
	for _, res := range []string{first.OperationID, second.OperationID} {
		op, err := r.j.Operation(ctx, res)
		if err != nil || op.TaskID != task.ID {
			t.Errorf("operation %s is in task %q (%v), want the run's %s", res, op.TaskID, err, task.ID)
		}
	}
	release()
	for name, tok := range map[string]string{"released": token, "none": "", "another": strings.Repeat("0", 64)} {
		if cs, err := connect(tok); err == nil {
			cs.Close()
			t.Errorf("%s token: connected, want refused", name)
		}
	}
	if strings.Contains(r.logs.String(), token) {
		t.Error("the run's token is in the log")
	}
}
