package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// An approval of the console's transport asked by another process and surface
// (an outside agent over MCP) is announced on a line of its own with how to
// answer it, and the answer typed then sends it once.
func TestAnotherSurfacesApprovalIsAnnouncedAndAnswerable(t *testing.T) {
	ctx := context.Background()
	dir, out := t.TempDir(), &lockedBuffer{}
	owner := rigtest.New(t, rigtest.Dir(dir), rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(out)), rigtest.EditPolicy(consoleUser),
		rigtest.Parts(func(p *wiring.Parts) { p.WatchEvery = 10 * time.Millisecond }))
	var elsewhere bytes.Buffer
	agent := rigtest.New(t, rigtest.Dir(dir), rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(&elsewhere)), rigtest.EditPolicy(consoleUser),
		rigtest.Parts(func(p *wiring.Parts) { p.Remote = true })).Operator

	in, typed := io.Pipe()
	c := &console.Console{Handler: owner.Handler, In: in, Out: out}
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	sweep, stop := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); owner.Operator.Sweep(sweep) }()
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
