package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/internal/procgroup"
)

// Command is one headless run of a CLI.
type Command struct {
	// Bin is the binary (from Find); Args its arguments.
	Bin  string
	Args []string
	// Env is added to the minimal environment (see Env), KEY=VALUE each.
	Env []string
	// Home is the run's HOME; "" gives it a fresh one. Runs that resume a
	// session share one.
	Home string
	// Dir is the working folder; "" gives it a fresh one.
	Dir string
	// Stdin is the run's standard input; nil gives it the null device.
	Stdin []byte
}

// Env is the whole environment of a run, as under env -i: PATH with the system
// folders and the folder of the node that runs this test's tools (a Node
// script's shebang and the Inspector both look it up), HOME, and extra. Nothing
// of the test's own environment leaks in: no real API key, no user config.
func Env(home string, extra ...string) []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	if node, err := exec.LookPath("node"); err == nil {
		path = filepath.Dir(node) + ":" + path
	}
	return append([]string{"PATH=" + path, "HOME=" + home, "LANG=C.UTF-8"}, extra...)
}

// TestAPIKey is the key the runs send the model test server; it opens nothing.
const TestAPIKey = "sk-ant-test-clitest"

// ClaudeEnv is what Claude Code needs to run offline against the model test
// server at baseURL: the server and a test key; no side requests, no telemetry;
// MCP tools in the request's tools (not deferred behind ToolSearch), so that a
// script can call them by name; and no retries of its own, so that a test sees
// each failure once (issue 12's coordinator decides the retries).
func ClaudeEnv(baseURL string) []string {
	return []string{"ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=" + TestAPIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_MAX_RETRIES=0"}
}

// Process is a running CLI, started by Start.
type Process struct {
	cmd     *exec.Cmd
	done    chan struct{}
	copying sync.WaitGroup // stdout and stderr

	mu     sync.Mutex
	out    lineWriter
	stderr bytes.Buffer
	events []Event
	seen   chan struct{} // closed and replaced when an event arrives
	result Result
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the process's exit status; -1 when a signal ended it (a test's
	// deadline, Stop).
	ExitCode int
	// Stdout and Stderr are all the run wrote.
	Stdout, Stderr string
	// Events are the stream-json events on stdout, in order (lines that are not
	// JSON objects are in Stdout only).
	Events []Event
	// Err is why the process could not be waited for, or the context's error
	// when the deadline ended it.
	Err error
}

// Start starts c, killing its process group when ctx ends and when the test
// ends; a test that failed logs how the run ended. It fails t when the binary
// cannot start.
func Start(t testing.TB, ctx context.Context, c Command) *Process {
	t.Helper()
	if c.Home == "" {
		c.Home = t.TempDir()
	}
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	cmd := exec.CommandContext(ctx, c.Bin, c.Args...)
	cmd.Env = Env(c.Home, c.Env...)
	cmd.Dir = c.Dir
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin) // a prompt; EOF after it
	} // else the null device: a CLI that reads stdin gets EOF at once
	p := &Process{cmd: cmd, done: make(chan struct{}), seen: make(chan struct{})}
	p.out.mu, p.out.line = &p.mu, p.add
	// Pipes of our own, not exec's copying: Wait then returns when the CLI
	// exits, even while something it started holds the pipes, and the group is
	// killed at once.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Kill(cmd) }
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("starting %s: %v", c.Bin, err)
	}
	p.copying.Add(2)
	go p.copy(&p.out, outR)
	go p.copy(lockedWriter{&p.mu, &p.stderr}, errR)
	go p.wait(ctx, outR, errR)
	t.Cleanup(func() {
		procgroup.Kill(cmd)
		<-p.done
		if t.Failed() { // what the CLI did is the first thing a failure needs
			t.Logf("%s: %s", filepath.Base(c.Bin), p.result.Summary())
		}
	})
	return p
}

func (p *Process) copy(w io.Writer, r io.Reader) {
	defer p.copying.Done()
	io.Copy(w, r)
}

// Run starts c and waits for its end (see Start and Wait).
func Run(t testing.TB, ctx context.Context, c Command) Result {
	t.Helper()
	return Start(t, ctx, c).Wait()
}

func (p *Process) wait(ctx context.Context, pipes ...*os.File) {
	err := p.cmd.Wait()
	procgroup.Kill(p.cmd) // whatever the CLI started and left behind
	copied := make(chan struct{})
	go func() { p.copying.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(2 * time.Second): // a writer outside the group (it left it)
		for _, f := range pipes {
			f.Close()
		}
		<-copied
	}
	for _, f := range pipes {
		f.Close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.flush()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case errors.As(err, &exit):
		err = nil
	}
	p.result = Result{ExitCode: p.cmd.ProcessState.ExitCode(), Stdout: p.out.all.String(), Stderr: p.stderr.String(),
		Events: append([]Event(nil), p.events...), Err: err}
	close(p.done)
}

// Wait waits for the process to end and returns how it ended.
func (p *Process) Wait() Result {
	<-p.done
	return p.result
}

// Stop kills the process group: the CLI and everything it started.
func (p *Process) Stop() {
	procgroup.Kill(p.cmd)
}

// WaitEvent waits until cond holds for the events so far, and returns them; it
// fails when ctx ends or the process ends first.
func (p *Process) WaitEvent(ctx context.Context, cond func([]Event) bool) ([]Event, error) {
	for {
		p.mu.Lock()
		events, seen := append([]Event(nil), p.events...), p.seen
		p.mu.Unlock()
		if cond(events) {
			return events, nil
		}
		select {
		case <-seen:
		case <-p.done:
			if r := p.Wait(); cond(r.Events) {
				return r.Events, nil
			}
			return events, errors.New("clitest: the process ended before the event came")
		case <-ctx.Done():
			return events, ctx.Err()
		}
	}
}

// add keeps one line of stdout as an event when it is one: a JSON object with
// a type. A line that is not of Claude Code's shape (Codex's) is kept with its
// Type and Raw only; Result.Codex reads those. Called with p.mu held.
func (p *Process) add(line []byte) {
	line = bytes.TrimSpace(line)
	if !bytes.HasPrefix(line, []byte("{")) {
		return
	}
	ev, err := ParseEvent(line)
	if err != nil {
		var head struct{ Type string }
		if json.Unmarshal(line, &head) != nil || head.Type == "" {
			return
		}
		ev = Event{Type: head.Type, Raw: append(json.RawMessage(nil), line...)}
	}
	p.events = append(p.events, ev)
	close(p.seen)
	p.seen = make(chan struct{})
}

// lineWriter collects what it is given and hands on each complete line.
type lineWriter struct {
	mu   *sync.Mutex
	all  bytes.Buffer
	part []byte
	line func([]byte)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(b)
	w.part = append(w.part, b...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.line(w.part[:i])
		w.part = w.part[i+1:]
	}
}

// flush hands on a last line without its newline. Called with the lock held.
func (w *lineWriter) flush() {
	if len(w.part) > 0 {
		w.line(w.part)
		w.part = nil
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}
