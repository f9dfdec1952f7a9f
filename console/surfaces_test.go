package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// An approval of the console's transport asked by another process and surface
// (an outside agent over MCP) is announced on a line of its own with how to
// answer it, and the answer typed then sends it once.
func TestAnotherSurfacesApprovalIsAnnouncedAndAnswerable(t *testing.T) {
	ctx := context.Background()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{console.User}, Approvers: []policy.UserID{console.User}}
	file := filepath.Join(t.TempDir(), "journal.db")
	open := func(o operator.Options, out io.Writer) *operator.Operator {
		j, err := journal.Open(ctx, file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		reg, err := tools.NewRegistry(p, console.NewPrinter(out))
		if err != nil {
			t.Fatal(err)
		}
		o.Journal, o.Tools, o.Policy, o.Transport = j, reg, p, console.Transport
		op, err := operator.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	out := &lockedBuffer{}
	owner := open(operator.Options{WatchEvery: 10 * time.Millisecond}, out)
	var elsewhere bytes.Buffer
	agent := open(operator.Options{Remote: true}, &elsewhere)

	in, typed := io.Pipe()
	j, _ := journal.Open(ctx, file)
	defer j.Close()
	c := &console.Console{Handler: &command.Handler{Operator: owner, Journal: j, Policy: p, Surface: console.Transport}, In: in, Out: out}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	sweep, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); owner.Sweep(sweep) }()
	defer func() { stop(); <-swept }()

	task, err := agent.StartTask(ctx, journal.Task{Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: "from an agent"})
	r, err := agent.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: args})
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("agent's call = %+v, %v; want pending", r, err)
	}
	want := "mcp asks to send_message to 222: \"from an agent\". Answer with /approve " + r.OperationID + " or /reject " + r.OperationID + "."
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no announcement %q in:\n%s", want, out.String())
		}
	}
	typed.Write([]byte("/approve " + r.OperationID + "\n"))
	typed.Close()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "→ sent to 222"); got != 1 || elsewhere.Len() != 0 {
		t.Errorf("sent %d times here, %q elsewhere; want once here:\n%s", got, elsewhere.String(), out.String())
	}
	if n := strings.Count(out.String(), "mcp asks"); n != 1 {
		t.Errorf("announced %d times, want once:\n%s", n, out.String())
	}
}
