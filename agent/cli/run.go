package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/agent/internal/procgroup"
	"github.com/countersign/countersign/model"
)

// causeStall is the Cause of an attempt the stall watch ended.
const causeStall = "stall"

// maxLine bounds one line of a CLI's stdout: a tool result can be long.
const maxLine = 16 << 20

// run makes one attempt: the provider's process in the chat's folder, its
// stdout read by the provider's Reader and watched for silence. A stall past
// the policy's abort time kills the process group, and the attempt is an
// interrupted one: retryable, in the session it had reached.
func (c *Coordinator) run(ctx context.Context, m *message) (Outcome, error) {
	var rel *relay
	if p, ok := c.opts.Provider.(relayed); ok {
		if base := p.service(c.opts.Env); base != "" {
			r, err := startRelay(base, c.opts.Env, c.opts.Now)
			if err != nil {
				return Outcome{}, fmt.Errorf("cli: %s: %w", c.opts.Provider.Name(), err)
			}
			defer r.Close()
			if !p.countsTurns() {
				r.bound(m.attempt.MaxTurns, func() { m.stop(turnsSpent(m.attempt.MaxTurns)) })
			}
			rel = r
		}
	}
	m.attempt.Service = ""
	if rel != nil {
		m.attempt.Service = rel.URL()
	}
	spec, err := c.opts.Provider.Command(m.attempt)
	if err != nil {
		return Outcome{}, fmt.Errorf("cli: %s: %w", c.opts.Provider.Name(), err)
	}
	for name, data := range spec.Files {
		path := filepath.Join(m.attempt.Dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return Outcome{}, fmt.Errorf("cli: %w", err)
		}
		defer os.Remove(path)
	}
	cmd := exec.CommandContext(ctx, spec.Path, spec.Args...)
	cmd.Env = append(slices.Clone(c.opts.Env), spec.Env...)
	cmd.Dir = m.attempt.Dir
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin) // the prompt, then EOF
	}
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 2 * time.Second // stderr held open by something the CLI left behind
	procgroup.Set(cmd)
	cmd.Cancel = func() error { return procgroup.Kill(cmd) }
	// A pipe of our own for stdout: Wait returns when the CLI exits even while
	// something it started holds the pipe.
	outR, outW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("cli: %w", err)
	}
	defer outR.Close()
	cmd.Stdout = outW
	err = startPrivate(cmd)
	outW.Close()
	if err != nil {
		return Outcome{}, fmt.Errorf("cli: starting %s: %w", c.opts.Provider.Name(), err)
	}
	// The silence counts from the start, before anyone hears of it.
	w := &watched{reader: c.opts.Provider.Reader(), now: c.opts.Now, last: c.opts.Now()}
	c.step(m, model.Step{Action: ActionStart, Detail: fmt.Sprintf("pid %d", cmd.Process.Pid)})
	read := make(chan struct{})
	go func() { defer close(read); w.read(outR) }()
	stalled := make(chan time.Duration, 1)
	stop := make(chan struct{})
	go c.watch(m, w, stop, stalled, func() { procgroup.Kill(cmd) })
	cmd.Wait()
	close(stop)
	procgroup.Kill(cmd) // whatever the CLI started and left behind
	select {
	case <-read:
	case <-time.After(2 * time.Second): // a writer that left the group
		outR.Close()
		<-read
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.reader.End(cmd.ProcessState.ExitCode())
	if !out.OK && out.Text == "" {
		out.Text = stderr.lastLine() // what a CLI that failed before its stream said
	}
	if wait, named := rel.asked(); !out.OK && out.RetryAfter <= 0 && named {
		out.RetryAfter = wait // the service's, which the CLI did not pass on
	}
	select {
	case s := <-stalled:
		c.step(m, model.Step{Action: model.ActionStallAbort, Cause: "stream", Wait: s.Round(time.Millisecond)})
		out = Outcome{Session: w.reader.Session(), Retryable: true, Cause: causeStall}
	default:
	}
	return out, nil
}

// watched is an attempt's Reader with the time of its last line, by the
// coordinator's clock.
type watched struct {
	mu     sync.Mutex
	reader Reader
	now    func() time.Time
	last   time.Time
}

func (w *watched) read(r *os.File) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), maxLine)
	for s.Scan() {
		w.mu.Lock()
		w.reader.Line(s.Bytes())
		w.last = w.now()
		w.mu.Unlock()
	}
}

// silence is the time since the last line; a tool call in flight is not
// silence (an await_outcome waits for a person's tap).
func (w *watched) silence() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.reader.InTool() {
		w.last = now
	}
	return now.Sub(w.last)
}

// watch warns after the policy's stall warning of silence and kills the
// attempt after its stall abort, reporting the silence on stalled.
func (c *Coordinator) watch(m *message, w *watched, stop <-chan struct{}, stalled chan<- time.Duration, kill func()) {
	warned := func(s time.Duration) {
		c.step(m, model.Step{Action: model.ActionStallWarning, Cause: "stream", Wait: s.Round(time.Millisecond)})
	}
	if s, ok := model.WatchSilence(stop, w.silence, m.retry.StallWarning, m.retry.StallAbort, warned); ok {
		stalled <- s
		kill()
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// lastLine is the last line written that is not blank.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
