package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// turn is one scripted attempt of fakeCLI: what its reader says at the end,
// whether a tool call is in flight all along, and whether its process runs
// until the test releases it (or the coordinator kills it).
type turn struct {
	out    cli.Outcome
	inTool bool
	hold   bool
	// sh, when set, is run by the process first (in the chat's folder).
	sh string
}

// fakeCLI is a Provider whose attempts are a small real process (a shell that
// reads the prompt from stdin) and whose reader says what the script says: the
// boundary to the external CLI, so that the coordinator's decisions are tested
// alone. It records each attempt the coordinator asks for.
type fakeCLI struct {
	fifo string // a held process reads it to its end

	mu       sync.Mutex
	script   []turn
	attempts []cli.Attempt
}

func (f *fakeCLI) Name() string { return "fake-cli" }

func (f *fakeCLI) Command(a cli.Attempt) (cli.Command, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, a)
	if len(f.attempts) > len(f.script) {
		return cli.Command{}, fmt.Errorf("attempt %d was not scripted", len(f.attempts))
	}
	t := f.script[len(f.attempts)-1]
	script := t.sh + "\nexec cat >/dev/null"
	if t.hold {
		script = t.sh + "\ncat >/dev/null; exec cat \"$1\" >/dev/null"
	}
	return cli.Command{Path: "/bin/sh", Args: []string{"-c", script, "sh", f.fifo}, Stdin: []byte(a.Prompt)}, nil
}

func (f *fakeCLI) Reader() cli.Reader {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fakeReader(f.script[len(f.attempts)-1])
}

// asked are the attempts so far.
func (f *fakeCLI) asked() []cli.Attempt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cli.Attempt(nil), f.attempts...)
}

// holdFifo makes the fifo a held attempt reads to its end, held open for
// writing until release. A process may open it only after release (a loaded
// machine starts it late): release first puts an empty file in the fifo's
// place, so that a late open reads nothing and ends, then closes the writer
// that an earlier open waits on.
func holdFifo(t *testing.T, dir string) (path string, release func()) {
	t.Helper()
	path = filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	release = sync.OnceFunc(func() {
		done := filepath.Join(dir, "hold.done")
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			t.Error(err)
		} else if err := os.Rename(done, path); err != nil {
			t.Error(err)
		}
		w.Close()
	})
	t.Cleanup(release)
	return path, release
}

type fakeReader turn

func (r fakeReader) Line([]byte)         {}
func (r fakeReader) Session() string     { return r.out.Session }
func (r fakeReader) InTool() bool        { return r.inTool }
func (r fakeReader) End(int) cli.Outcome { return r.out }

// fakeClock is the stall watch's clock: it moves only when the test says, and
// counts its reads, so that a test knows when the watch has looked at it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	reads int
	read  chan struct{} // closed and replaced at each read
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), read: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	close(c.read)
	c.read = make(chan struct{})
	return c.now
}

// advance moves the clock by d and returns the reads so far.
func (c *fakeClock) advance(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.reads
}

// waitReads waits until the clock has been read more than n times.
func (c *fakeClock) waitReads(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		c.mu.Lock()
		reads, read := c.reads, c.read
		c.mu.Unlock()
		if reads > n {
			return
		}
		select {
		case <-read:
		case <-deadline:
			t.Fatalf("the clock was read %d times, want more than %d", reads, n)
		}
	}
}

// recorder keeps the coordinator's steps.
type recorder struct {
	mu      sync.Mutex
	steps   []model.Step
	changed chan struct{}
}

func (r *recorder) observe(s model.Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
	close(r.changed)
	r.changed = make(chan struct{})
}

// path is the steps as action(cause), attempt by attempt.
func (r *recorder) path() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var p []string
	for _, s := range r.steps {
		a := string(s.Action)
		if s.Cause != "" {
			a += "(" + s.Cause + ")"
		}
		p = append(p, a)
	}
	return p
}

// wait waits until a step of action has been taken by attempt n.
func (r *recorder) wait(t *testing.T, action model.Action, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		changed := r.changed
		for _, s := range r.steps {
			if s.Action == action && s.Attempt == n {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s step of attempt %d; steps %v", action, n, r.path())
		}
	}
}

// harness is a coordinator over fakeCLI, with a real journal and operator (the
// task's policy snapshot, the chat's session), in chat "100" of one task.
type harness struct {
	coord   *cli.Coordinator
	cli     *fakeCLI
	journal *journal.Journal
	op      *operator.Operator
	taskID  string
	steps   *recorder
	clock   *fakeClock
	sleeps  []time.Duration
	// release ends a held process's wait.
	release func()
}

const chat = "100"

// newHarness scripts the attempts, under the default model section changed by
// edit; session, when set, is the chat's session before the message. Unless
// realSleep, the waits between attempts are recorded and skipped.
func newHarness(t *testing.T, script []turn, edit func(*policy.Model), session string, realSleep bool) *harness {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	rig := rigtest.New(t, rigtest.Dir(dir), rigtest.Transport(""), rigtest.EditPolicy(func(pol *policy.Policy) {
		pol.Model = policy.DefaultModel()
		pol.Model.Name, pol.Model.Fallback = "main-model", "fallback-model"
		if edit != nil {
			edit(&pol.Model)
		}
	}))
	j, op := rig.Journal, rig.Operator
	task, err := op.StartTask(ctx, journal.Task{Requester: 1, Chat: chat, Summary: "a chat message"})
	if err != nil {
		t.Fatal(err)
	}
	fifo, release := holdFifo(t, dir)
	h := &harness{cli: &fakeCLI{fifo: fifo, script: script}, journal: j, op: op, taskID: task.ID,
		steps: &recorder{changed: make(chan struct{})}, clock: newClock(), release: release}
	if session != "" {
		if err := j.SetSession(ctx, h.cli.Name(), chat, session); err != nil {
			t.Fatal(err)
		}
	}
	o := cli.Options{Provider: h.cli, Gate: openGate{}, Sessions: j, Operator: op, Journal: j,
		Dir: filepath.Join(dir, "agents"), Observe: h.steps.observe, Now: h.clock.Now}
	if !realSleep {
		o.Sleep = func(_ context.Context, d time.Duration) error { h.sleeps = append(h.sleeps, d); return nil }
	}
	if h.coord, err = cli.New(o); err != nil {
		t.Fatal(err)
	}
	return h
}

// chat sends text and returns the reply, within a deadline that ends the run.
func (h *harness) chat(t *testing.T, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reply, err := h.coord.Chat(ctx, h.taskID, chat, text)
	if err != nil {
		t.Fatalf("Chat: %v; steps %v", err, h.steps.path())
	}
	return reply
}

// send sends text in the background; replied waits for its reply.
func (h *harness) send(text string) <-chan result {
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		reply, err := h.coord.Chat(ctx, h.taskID, chat, text)
		done <- result{reply, err}
	}()
	return done
}

type result struct {
	reply string
	err   error
}

// replied is the reply sent gave, within a deadline.
func (h *harness) replied(t *testing.T, sent <-chan result) string {
	t.Helper()
	select {
	case r := <-sent:
		if r.err != nil {
			t.Fatalf("Chat: %v; steps %v", r.err, h.steps.path())
		}
		return r.reply
	case <-time.After(40 * time.Second):
		t.Fatalf("no reply; steps %v", h.steps.path())
	}
	return ""
}

// session is the chat's session in the journal.
func (h *harness) session(t *testing.T) string {
	t.Helper()
	s, err := h.journal.Session(context.Background(), h.cli.Name(), chat)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openGate opens no real tools: the fake CLI calls none.
type openGate struct{}

func (openGate) Open(context.Context, string) (cli.Tools, func(), error) {
	return cli.Tools{Server: "countersign", URL: "http://127.0.0.1:1/mcp", Token: "run-token", Names: []string{"prepare_reply"}}, func() {}, nil
}

var (
	overload  = cli.Outcome{Text: "API Error: 529 Overloaded", Session: "s-1", Retryable: true, Overload: true, Cause: "529"}
	ratelimit = cli.Outcome{Text: "API Error: 429", Session: "s-1", Retryable: true, Cause: "429"}
	answered  = cli.Outcome{OK: true, Text: "answered", Session: "s-1"}
)

// Overloads count toward the fallback model only in a row: another failure
// between two overloads starts the count again.
func TestCoordinatorFallsBackAfterOverloadsInARowOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script []cli.Outcome
		models []string
	}{
		{"two in a row", []cli.Outcome{overload, overload, answered}, []string{"main-model", "main-model", "fallback-model"}},
		{"a rate limit between", []cli.Outcome{overload, ratelimit, overload, answered},
			[]string{"main-model", "main-model", "main-model", "main-model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var script []turn
			for _, out := range tt.script {
				script = append(script, turn{out: out})
			}
			h := newHarness(t, script, func(m *policy.Model) { m.OverloadsBeforeFallback = 2 }, "", false)
			if got := h.chat(t, "hello"); got != "answered" {
				t.Fatalf("reply %q, want answered; steps %v", got, h.steps.path())
			}
			var models []string
			for _, a := range h.cli.asked() {
				models = append(models, a.Model)
			}
			if got, want := strings.Join(models, " "), strings.Join(tt.models, " "); got != want {
				t.Errorf("models asked %s, want %s", got, want)
			}
		})
	}
}

// An attempt that failed before the CLI named its session ran nothing in one:
// the retry asks the operator's text again, in the chat's session or in a new
// one, never resuming a session that does not exist nor sending the
// continuation prompt to a session that never heard the text.
func TestCoordinatorRetriesWithoutASessionAskingTheTextAgain(t *testing.T) {
	t.Parallel()
	early := cli.Outcome{Text: "API Error: 529 Overloaded", Retryable: true, Overload: true, Cause: "529"}
	tests := []struct {
		name, before string
	}{
		{"a new chat", ""},
		{"a chat with a session", "s-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []turn{{out: early}, {out: answered}}, nil, tt.before, false)
			if got := h.chat(t, "hello"); got != "answered" {
				t.Fatalf("reply %q, want answered; steps %v", got, h.steps.path())
			}
			asked := h.cli.asked()
			for _, a := range asked {
				if a.Session != tt.before || a.Prompt != "hello" {
					t.Errorf("attempt %d: session %q, prompt %q; want session %q, the operator's text", a.N, a.Session, a.Prompt, tt.before)
				}
			}
			if len(asked) != 2 || h.session(t) != "s-1" {
				t.Errorf("%d attempts, the chat's session %q; want 2, s-1", len(asked), h.session(t))
			}
		})
	}
}

// A session the CLI no longer has (the resume fails before any session) is
// forgotten, and the message is asked again at once in a new session; a run
// that fails that way again is not asked a third time.
func TestCoordinatorForgetsASessionTheCLINoLongerHas(t *testing.T) {
	t.Parallel()
	gone := cli.Outcome{Text: "No conversation found with session ID: gone-1", Cause: "exit 1"}
	tests := []struct {
		name    string
		second  cli.Outcome
		reply   string
		session string
	}{
		{"answered in a new session", cli.Outcome{OK: true, Text: "answered", Session: "s-2"}, "answered", "s-2"},
		{"failing again", gone, "could not finish after 2 attempt(s): No conversation found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []turn{{out: gone}, {out: tt.second}}, nil, "gone-1", false)
			if got := h.chat(t, "hello"); !strings.Contains(got, tt.reply) {
				t.Fatalf("reply %q, want it to say %q; steps %v", got, tt.reply, h.steps.path())
			}
			asked := h.cli.asked()
			if len(asked) != 2 || asked[0].Session != "gone-1" || asked[1].Session != "" || asked[1].Prompt != "hello" {
				t.Fatalf("attempts %+v; want gone-1 resumed, then the operator's text in a new session", asked)
			}
			if got := h.session(t); got != tt.session {
				t.Errorf("the chat's session %q, want %q", got, tt.session)
			}
			if path := strings.Join(h.steps.path(), " "); !strings.Contains(path, string(cli.ActionForget)) || len(h.sleeps) != 1 || h.sleeps[0] != 0 {
				t.Errorf("steps %s, waits %v; want the session forgotten, no wait", path, h.sleeps)
			}
		})
	}
}

// The wait budget (turn_wait) ends the retries: a wait that would overrun
// it is not waited, and the message gives up.
func TestCoordinatorStopsWhenTheWaitBudgetIsSpent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: overload}, {out: overload}, {out: overload}, {out: answered}}, func(m *policy.Model) {
		m.TurnWait = 3 * time.Second
		m.Backoff = policy.Backoff{Base: 2 * time.Second, Cap: 2 * time.Second, Jitter: 0.01}
	}, "", false)
	reply := h.chat(t, "hello")
	if !strings.Contains(reply, "could not finish after 2 attempt(s)") || len(h.cli.asked()) != 2 {
		t.Errorf("reply %q after %d attempts; want the give-up after 2", reply, len(h.cli.asked()))
	}
	if len(h.sleeps) != 1 || h.sleeps[0] > 2*time.Second || h.sleeps[0] < 1900*time.Millisecond {
		t.Errorf("waits %v, want one of about 2s", h.sleeps)
	}
	if path := h.steps.path(); path[len(path)-1] != "stop(529)" {
		t.Errorf("steps %v, want them to end with the stop", path)
	}
}

// /stop during the wait before a retry ends the message at once: the wait is
// cut short and no further attempt starts.
func TestCoordinatorStopDuringTheWaitEndsTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: overload}, {out: answered}}, func(m *policy.Model) {
		m.TurnWait = 2 * time.Hour
		m.Backoff = policy.Backoff{Base: time.Hour, Cap: time.Hour, Jitter: 0.01}
	}, "", true)
	sent := h.send("hello")
	h.steps.wait(t, model.ActionRetry, 1) // taken just before the wait
	if !h.coord.Stop(chat) {
		t.Fatal("Stop found no run")
	}
	select {
	case r := <-sent:
		if !strings.HasPrefix(r.reply, "Stopped, as you asked") || r.err != nil {
			t.Errorf("reply %q (%v), want the stop told", r.reply, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the message did not end after /stop")
	}
	if n := len(h.cli.asked()); n != 1 {
		t.Errorf("%d attempts, want the first only", n)
	}
}

// A CLI silent past the stall limit is killed, and the message goes on in the
// session the attempt reached, with the continuation prompt. The silence is
// the test's clock's: it lasts as long as the test says, however busy the
// machine.
func TestCoordinatorCutsAStalledAttemptAndContinues(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: cli.Outcome{Session: "s-1"}, hold: true}, {out: answered}}, func(m *policy.Model) {
		m.StallWarning, m.StallAbort = time.Second, 2*time.Second
	}, "", false)
	sent := h.send("hello")
	h.steps.wait(t, cli.ActionStart, 1)
	h.clock.advance(3 * time.Second)
	if reply := h.replied(t, sent); reply != "answered" {
		t.Fatalf("reply %q, want answered; steps %v", reply, h.steps.path())
	}
	want := "start stall_warning(stream) stall_abort(stream) retry(stall) start ok"
	if got := strings.Join(h.steps.path(), " "); got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if a := h.cli.asked(); len(a) != 2 || a[1].Session != "s-1" || a[1].Prompt != cli.ContinuationPrompt {
		t.Errorf("attempts %+v; want the second in s-1 with the continuation prompt", a)
	}
}

// A tool call in flight is not silence: an attempt waiting on one (an
// await_outcome waiting for a tap) far past the stall limit is let be.
func TestCoordinatorLetsAToolCallOutlastTheStallLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: answered, inTool: true, hold: true}}, func(m *policy.Model) {
		m.StallWarning, m.StallAbort = time.Second, 2*time.Second
	}, "", false)
	sent := h.send("hello")
	h.steps.wait(t, cli.ActionStart, 1)
	reads := h.clock.advance(time.Hour)
	h.clock.waitReads(t, reads) // the watch has looked at the hour gone by
	h.release()
	if reply := h.replied(t, sent); reply != "answered" {
		t.Errorf("reply %q, want answered", reply)
	}
	if got, want := strings.Join(h.steps.path(), " "), "start ok"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
}

// A held attempt whose release came before its process reached the fifo (a
// loaded machine starts processes late) still ends at once: the tests that
// hold an attempt must not stall on when the process happened to start.
func TestAHeldAttemptReleasedBeforeItStartsEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: answered, hold: true}}, nil, "", false)
	h.release()
	if reply := h.replied(t, h.send("hello")); reply != "answered" {
		t.Errorf("reply %q, want answered", reply)
	}
	if got, want := strings.Join(h.steps.path(), " "), "start ok"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
}

// What a CLI writes in a run (Codex's session records, its logs) is its
// user's alone, whatever the bot's umask: Codex makes its files 0644 and its
// folders 0755 under the usual umask 022, and its records hold the chat. The
// chat's folder is 0700.
func TestCoordinatorKeepsWhatTheCLIWritesPrivate(t *testing.T) {
	old := syscall.Umask(0o022) // process-wide: this package's tests do not run in parallel
	t.Cleanup(func() { syscall.Umask(old) })
	h := newHarness(t, []turn{{out: answered, sh: "mkdir made-dir && echo record > made-dir/record.jsonl"}}, nil, "", false)
	if got := h.chat(t, "hello"); got != "answered" {
		t.Fatalf("reply %q, want answered", got)
	}
	folder := h.cli.asked()[0].Dir
	for path, want := range map[string]os.FileMode{folder: 0o700, filepath.Join(folder, "made-dir"): 0o700,
		filepath.Join(folder, "made-dir", "record.jsonl"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o", path, got, want)
		}
	}
}

// A doom-loop stop of the run's own tool calls ends the run: the coordinator
// learns of it (not only the CLI, as a tool error it may shrug off), kills the
// attempt and tells the chat which call looped. The calls are made through
// the operator, as the run's MCP server makes them.
func TestCoordinatorEndsTheRunAtADoomLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: answered, hold: true}}, nil, "", false)
	sent := h.send("hello")
	h.steps.wait(t, cli.ActionStart, 1)
	call := operator.Call{Tool: "prepare_reply", Args: []byte(`{"text":"Hi all"}`)}
	for range 2 {
		if _, err := h.op.Call(context.Background(), h.taskID, call); err != nil {
			t.Fatal(err)
		}
	}
	reply := h.replied(t, sent)
	if !strings.Contains(reply, `possible doom loop: prepare_reply(text: "Hi all")`) {
		t.Errorf("reply %q, want the doom loop told, naming the call", reply)
	}
	if got, want := strings.Join(h.steps.path(), " "), "start stop(doom_loop)"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if n := len(h.cli.asked()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// A budget stop of the run's own tool calls ends the run as a doom loop does:
// the second refused call spends the task's repair budget (1), the operator
// stops it, and the coordinator kills the attempt and tells the chat why.
func TestCoordinatorEndsTheRunWhenTheBudgetIsSpent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: answered, hold: true}}, nil, "", false)
	sent := h.send("hello")
	h.steps.wait(t, cli.ActionStart, 1)
	var last action.Result
	for _, args := range []string{`{"text":""}`, `{}`} { // two calls, each refused in its own way
		r, err := h.op.Call(context.Background(), h.taskID, operator.Call{Tool: "prepare_reply", Args: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		last = r
	}
	if last.Cause != action.CauseBudget {
		t.Fatalf("the second refused call = %+v, want a budget stop", last)
	}
	reply := h.replied(t, sent)
	if !strings.HasPrefix(reply, "Stopped: ") || !strings.Contains(reply, "budget") {
		t.Errorf("reply %q, want the spent budget told", reply)
	}
	if got, want := strings.Join(h.steps.path(), " "), "start stop(budget_exhausted)"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	if n := len(h.cli.asked()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// A message's run is bounded in time by the policy (model.run_time): a run
// past it is ended, however busy its tools, and the chat is told.
func TestCoordinatorEndsARunPastItsTimeBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: answered, inTool: true, hold: true}}, func(m *policy.Model) {
		m.RunTime = 200 * time.Millisecond
	}, "", true)
	reply := h.replied(t, h.send("hello"))
	if !strings.Contains(reply, "ran past its time bound (200ms)") {
		t.Errorf("reply %q, want the time bound told", reply)
	}
	if path := h.steps.path(); path[len(path)-1] != "stop(run_time)" {
		t.Errorf("steps %v, want them to end with stop(run_time)", path)
	}
}

// A message that gives up after a send of its task went out says so, with the
// operation, instead of "nothing else was done" (the tool ran, the report
// failed).
func TestCoordinatorGivingUpSaysWhatWasAlreadyDone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []turn{{out: overload}, {out: overload}, {out: overload}, {out: answered}}, func(m *policy.Model) {
		m.TurnWait = 3 * time.Second
		m.Backoff = policy.Backoff{Base: 2 * time.Second, Cap: 2 * time.Second, Jitter: 0.01}
	}, "", false)
	ctx := context.Background()
	// A send of the task that went out before the failure, as the operator
	// records one.
	op, err := h.journal.CreateOperation(ctx, journal.Operation{TaskID: h.taskID, Tool: "commit_send_message", Fingerprint: "fp",
		Payload: action.Payload{Action: action.SendMessage, Target: "222", Text: "hi"}}, "prepared")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.Approved},
		{From: journal.Approved, To: journal.Committing, StartAttempt: true}, {From: journal.Committing, To: journal.Committed, AttemptOutcome: "committed"}} {
		if err := h.journal.Move(ctx, op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	reply := h.chat(t, "hello")
	if want := "Done before that: commit_send_message " + op.ID + "; nothing else was done"; !strings.Contains(reply, want) || strings.Contains(reply, "Nothing else was done") {
		t.Errorf("reply %q, want it to say %q", reply, want)
	}
}
