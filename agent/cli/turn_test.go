package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// events is the one record of what every replica's coordinator did, in the
// order it happened: "r1 start", "r2 wait_turn: …", "r1 ok", …
type events struct {
	mu      sync.Mutex
	list    []string
	changed chan struct{}
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *events) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// wait waits until an event starts with prefix.
func (e *events) wait(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		e.mu.Lock()
		changed := e.changed
		for _, s := range e.list {
			if strings.HasPrefix(s, prefix) {
				e.mu.Unlock()
				return
			}
		}
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no event %q; events %q", prefix, e.all())
		}
	}
}

// replicaCLI is one replica of the bot as far as agent-CLI runs go: its own
// journal joined under its name to the shared PostgreSQL database, its
// renewals (as the operator makes them), its operator and its coordinator over
// a fake CLI whose attempts the test scripts.
type replicaCLI struct {
	name    string
	journal *journal.Journal
	op      *operator.Operator
	coord   *cli.Coordinator
	cli     *fakeCLI
	// stop ends its renewals: the replica is dead to the others.
	stop func()
	// release ends its held attempt.
	release func()
}

// newReplicaCLI joins the journal at url as replica name with lease, scripts
// its CLI's attempts, and records its coordinator's steps in ev.
func newReplicaCLI(t *testing.T, url, name string, lease time.Duration, script []turn, ev *events) *replicaCLI {
	t.Helper()
	ctx := context.Background()
	rig := rigtest.New(t, rigtest.Journal(url), rigtest.EditPolicy(func(pol *policy.Policy) { pol.Model = policy.DefaultModel() }))
	j, op := rig.Journal, rig.Operator
	shared := coord.New(j)
	if err := j.Join(ctx, "telegram", name, lease); err != nil {
		t.Fatal(err)
	}
	if err := shared.Joined(ctx); err != nil { // as the binary joins
		t.Fatal(err)
	}
	renewing, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(lease / 10)
		defer tick.Stop()
		for {
			// As the operator's sweep renews: the journal's claims, then the
			// chats' turns.
			if j.RenewLeases(renewing) == nil {
				shared.RenewLeases(renewing)
			}
			select {
			case <-renewing.Done():
				return
			case <-tick.C:
			}
		}
	}()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	dir := t.TempDir()
	fifo, release := holdFifo(t, dir)
	r := &replicaCLI{name: name, journal: j, op: op, cli: &fakeCLI{fifo: fifo, script: script}, stop: stop, release: release}
	observe := func(s model.Step) {
		e := name + " " + string(s.Action)
		if s.Cause != "" {
			e += "(" + s.Cause + ")"
		}
		if s.Action == cli.ActionWaitTurn || s.Action == cli.ActionTakeTurn && s.Detail != "" {
			e += ": " + s.Detail
		}
		ev.add(e)
	}
	var err error
	r.coord, err = cli.New(cli.Options{Provider: r.cli, Gate: openGate{}, Sessions: j, Operator: op, Journal: j,
		Dir: filepath.Join(dir, "agents"), Transport: "telegram", Observe: observe,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// message is message id of chat, received by r as Telegram's update (stored in
// the inbox) and started as its task, as the bot does before it asks the
// coordinator.
func (r *replicaCLI) message(t *testing.T, chat string, id int) (taskID, key string) {
	t.Helper()
	ctx := context.Background()
	key = fmt.Sprintf("message:%s:%d", chat, id)
	if _, err := r.journal.Receive(ctx, []journal.InboxItem{{UpdateID: int64(id), Key: key, Body: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	task, err := r.op.StartTask(ctx, journal.Task{Requester: 1, Chat: chat, Summary: "chat", Origin: "telegram:" + key})
	if err != nil {
		t.Fatal(err)
	}
	return task.ID, key
}

// chat asks r's coordinator to run the message of taskID in the background,
// and marks its update handled when the run is over, as the bot does.
func (r *replicaCLI) chat(chat, taskID, key string) <-chan result {
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		reply, err := r.coord.Chat(ctx, taskID, chat, "hello")
		if err == nil {
			err = r.journal.Handled(context.WithoutCancel(ctx), key)
		}
		done <- result{reply, err}
	}()
	return done
}

func reply(t *testing.T, sent <-chan result, ev *events) string {
	t.Helper()
	select {
	case r := <-sent:
		if r.err != nil {
			t.Fatalf("Chat: %v; events %q", r.err, ev.all())
		}
		return r.reply
	case <-time.After(40 * time.Second):
		t.Fatalf("no reply; events %q", ev.all())
	}
	return ""
}

// Two messages of one chat that land on two replicas never run two CLI
// sessions at once: the later one, asked first, waits for the earlier (which
// the inbox stored first), then for its run, and starts only after that run's
// process ended.
func TestTwoReplicasRunOneChatsMessagesOneAtATime(t *testing.T) {
	t.Parallel()
	url := pgtest.Fresh(t)
	ev := newEvents()
	held := turn{out: answered, hold: true}
	r1 := newReplicaCLI(t, url, "r1", 3*time.Second, []turn{held}, ev)
	r2 := newReplicaCLI(t, url, "r2", 3*time.Second, []turn{{out: answered}}, ev)
	firstTask, firstKey := r1.message(t, "100", 1)
	secondTask, secondKey := r2.message(t, "100", 2)

	second := r2.chat("100", secondTask, secondKey)
	ev.wait(t, "r2 wait_turn: 1 message(s) of the chat go first")
	first := r1.chat("100", firstTask, firstKey)
	ev.wait(t, "r1 start")
	ev.wait(t, "r2 wait_turn: a message of replica r1 runs")
	r1.release()
	if got := reply(t, first, ev); got != "answered" {
		t.Errorf("first reply %q", got)
	}
	if got := reply(t, second, ev); got != "answered" {
		t.Errorf("second reply %q", got)
	}
	got := ev.all()
	paths := map[string][]string{
		"r1": {"r1 take_turn", "r1 start", "r1 ok"},
		"r2": {"r2 wait_turn: 1 message(s) of the chat go first", "r2 wait_turn: a message of replica r1 runs",
			"r2 take_turn", "r2 start", "r2 ok"},
	}
	for r, want := range paths {
		if of := slices.DeleteFunc(slices.Clone(got), func(e string) bool { return !strings.HasPrefix(e, r+" ") }); !slices.Equal(of, want) {
			t.Errorf("%s's path %q, want %q", r, of, want)
		}
	}
	// The first message took the turn only after the second asked, and the
	// second took it only once the first's process had ended.
	at := func(e string) int { return slices.Index(got, e) }
	if at("r2 wait_turn: 1 message(s) of the chat go first") > at("r1 take_turn") || at("r1 ok") > at("r2 take_turn") {
		t.Errorf("events %q: want r2 waiting before r1 takes, and r1's run over before r2 takes", got)
	}
}

// A replica that died holding a chat's turn holds it no longer than its lease:
// the next message, on another replica, waits for it, then drops it and runs.
func TestADeadReplicasChatTurnIsTakenAfterItsLease(t *testing.T) {
	t.Parallel()
	url := pgtest.Fresh(t)
	ev := newEvents()
	r1 := newReplicaCLI(t, url, "r1", time.Second, nil, ev)
	r2 := newReplicaCLI(t, url, "r2", 3*time.Second, []turn{{out: answered}}, ev)
	ctx := context.Background()
	firstTask, _ := r1.message(t, "100", 1)
	secondTask, secondKey := r2.message(t, "100", 2)
	// r1 took the turn for its message, its CLI started, and it died.
	mine := coord.ChatTurn{Transport: "telegram", Chat: "100", Task: firstTask}
	if err := coord.New(r1.journal).QueueChatTurn(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if try, err := coord.New(r1.journal).TakeChatTurn(ctx, mine); err != nil || !try.Taken {
		t.Fatalf("r1's take = %+v, %v", try, err)
	}
	r1.stop()
	taken := time.Now()

	if got := reply(t, r2.chat("100", secondTask, secondKey), ev); got != "answered" {
		t.Errorf("reply %q", got)
	}
	if waited := time.Since(taken); waited < time.Second {
		t.Errorf("r2 ran %v after r1's take, within r1's lease (1s)", waited)
	}
	want := []string{
		"r2 wait_turn: a message of replica r1 runs",
		"r2 take_turn(lease_expired): dropped the turn of [r1 (running)], whose lease ran out",
		"r2 start", "r2 ok",
	}
	if got := ev.all(); !slices.Equal(got, want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
}

// A replica that cannot renew its turn (it lost the database, or stalled) ends
// its own run before its lease runs out, so that the run never overlaps the
// run another replica may start after the lease; the chat is told why.
func TestAReplicaThatCannotKeepItsTurnEndsItsRun(t *testing.T) {
	t.Parallel()
	url := pgtest.Fresh(t)
	ev := newEvents()
	r1 := newReplicaCLI(t, url, "r1", time.Second, []turn{{out: answered, hold: true}}, ev)
	// Its held attempt is never released: only the lost turn ends the run.
	task, key := r1.message(t, "100", 1)
	sent := r1.chat("100", task, key)
	ev.wait(t, "r1 start")
	r1.stop()
	got := reply(t, sent, ev)
	if !strings.Contains(got, "could not keep the chat's turn") {
		t.Errorf("reply %q, want the lost turn told", got)
	}
	want := []string{"r1 take_turn", "r1 start", "r1 stop(turn_lost)"}
	if got := ev.all(); !slices.Equal(got, want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
	// Its turn is over: nothing of the chat is left queued.
	try, err := coord.New(r1.journal).TakeChatTurn(context.Background(), coord.ChatTurn{Transport: "telegram", Chat: "100", Task: task})
	if err == nil {
		t.Errorf("the ended run's turn is still there: %+v", try)
	}
}
