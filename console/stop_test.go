package console_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/model"
)

// lockedBuffer is the console's output, written from more than one goroutine.
type lockedBuffer = syncbuf.Buffer

// /stop typed while the model works ends its turn; the session goes on.
func TestStopTypedWhileTheModelWorks(t *testing.T) {
	ctx := context.Background()
	out := &lockedBuffer{}
	r := rigtest.New(t, rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(out)), rigtest.EditPolicy(consoleUser))
	server := agenttest.NewServer(t, agenttest.Message("end_turn", "too late").HangFor(time.Minute))
	r.Handler.Agent = agent.NewLoop(model.NewRecovery(model.NewAnthropic("sk-ant-test", server.URL), model.Policy{}), "claude-test", r.Operator, r.Tools, agent.LoopLimits{}, nil)
	typed, keys := io.Pipe()
	c := &console.Console{Handler: r.Handler, In: typed, Out: out}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	io.WriteString(keys, "write a very long report\n")
	deadline := time.Now().Add(10 * time.Second)
	for len(server.Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the model request never arrived")
		}
		time.Sleep(5 * time.Millisecond) // the model server records the request it holds
	}
	io.WriteString(keys, "/stop\n/ops\n")
	keys.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the console did not end after /stop; output:\n%s", out)
	}
	got := out.String()
	for _, want := range []string{"Stopped, as you asked", "No operations yet."} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "too late") {
		t.Errorf("the abandoned reply reached the console:\n%s", got)
	}
}
