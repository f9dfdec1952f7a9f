package command_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

const (
	operatorID = 1
	approverID = 2 // approves, never operates
	strangerID = 3
)

// recorder is the world's edge: it delivers every message and remembers it.
type recorder struct {
	mu   sync.Mutex
	sent []tools.Message
}

func (r *recorder) Send(_ context.Context, m tools.Message) (tools.Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, m)
	return tools.Delivery{ChatID: m.Target, MessageID: int64(len(r.sent))}, nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

// world is a data folder and a sender that outlive the processes opened over them.
type world struct {
	t      *testing.T
	dir    string
	sender *recorder
	j      *journal.Journal
}

func newWorld(t *testing.T) *world {
	return &world{t: t, dir: t.TempDir(), sender: &recorder{}}
}

func testPolicy(t *testing.T, approvers ...policy.UserID) *policy.Policy {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{operatorID}, Approvers: approvers}
	return p
}

// start opens the world under policy p, as a process start does (the sender of
// surface's operations), and returns the handler of surface over it.
func (w *world) start(p *policy.Policy, surface string) *command.Handler {
	w.t.Helper()
	if w.j != nil {
		w.j.Close() // the process before stopped
	}
	r := rigtest.New(w.t, rigtest.Dir(w.dir), rigtest.Policy(p), rigtest.Sender(w.sender), rigtest.Transport(surface), rigtest.Owning())
	w.j = r.Journal
	return r.Handler
}

func (w *world) operations() []journal.Operation {
	w.t.Helper()
	ops, err := w.j.Operations(context.Background(), journal.Filter{})
	if err != nil {
		w.t.Fatal(err)
	}
	return ops
}

// TestOnlyAnOperatorGivesCommands: the handler checks for itself, on every
// surface, that the user may operate. An approver who is not an operator, and a
// stranger, get ErrNotOperator for every command, and nothing changes: no task,
// no operation, no send, no cancel of an operation waiting for its tap.
func TestOnlyAnOperatorGivesCommands(t *testing.T) {
	for _, surface := range []string{"console", "telegram"} {
		t.Run(surface, func(t *testing.T) {
			w := newWorld(t)
			h := w.start(testPolicy(t, operatorID, approverID), surface)
			ctx := context.Background()
			mine, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/send 222 hello", Origin: surface + ":1"})
			if err != nil || mine.Result == nil || mine.Result.Status != action.StatusPending {
				t.Fatalf("the operator's /send = %+v, %v; want one approval to ask for", mine, err)
			}
			waiting := mine.Result.OperationID
			for _, user := range []int64{approverID, strangerID} {
				for i, line := range []string{"/send 222 hi", "/publish @news hi", "/draft hi", "/ops", "/pending",
					"/cancel " + waiting, "/retry " + waiting, "/resolve " + waiting + " delivered", "/new", "/help"} {
					r, err := h.Handle(ctx, command.Request{User: policy.UserID(user), Chat: "1", Line: line, Origin: fmt.Sprintf("%s:%d:%d", surface, user, i)})
					if !errors.Is(err, command.ErrNotOperator) || r.Text != "" || r.Result != nil {
						t.Errorf("user %d %q = %+v, %v; want ErrNotOperator and nothing else", user, line, r, err)
					}
				}
			}
			if ops := w.operations(); len(ops) != 1 || ops[0].ID != waiting || ops[0].State != journal.AwaitingApproval {
				t.Errorf("operations = %+v, want only %s, still awaiting approval", ops, waiting)
			}
			if n := w.sender.count(); n != 0 {
				t.Errorf("sends = %d, want 0", n)
			}
		})
	}
}

// TestTheCardNamesTheApproversOfTheTask: the approvers an approval is shown to are
// those of both the policy its task started with and the policy in force, the
// list the decision is checked against: after the file changed and the bot
// restarted, neither the approver removed nor the one added may decide.
func TestTheCardNamesTheApproversOfTheTask(t *testing.T) {
	w := newWorld(t)
	h := w.start(testPolicy(t, operatorID, approverID), "console")
	ctx := context.Background()
	r, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/send 222 hello"})
	if err != nil || r.Result == nil || r.Result.Status != action.StatusPending {
		t.Fatalf("/send = %+v, %v; want one approval", r, err)
	}
	opID := r.Result.OperationID
	asked, err := h.Approval(ctx, opID)
	if got := fmt.Sprint(asked.Approvers); err != nil || got != fmt.Sprint([]int64{operatorID, approverID}) {
		t.Errorf("approvers = %s, %v; want [1 2]", got, err)
	}
	const newcomer = 9
	h = w.start(testPolicy(t, operatorID, newcomer), "console") // approver 2 replaced by 9
	a, err := h.Approval(ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(a.Approvers); got != fmt.Sprint([]int64{operatorID}) {
		t.Errorf("approvers after the edit = %s, want those of both policies: [1]", got)
	}
	for _, who := range []int64{newcomer, approverID} {
		d, err := h.Decide(ctx, a.ID, policy.UserID(who), true)
		if err != nil || !strings.HasPrefix(d.Text, "Refused: ") || w.sender.count() != 0 {
			t.Errorf("the tap of %d = %+v, %v with %d sends; want a refusal and no send", who, d, err, w.sender.count())
		}
	}
	if d, err := h.Decide(ctx, a.ID, operatorID, true); err != nil || d.Result == nil || d.Result.Status != action.StatusSucceeded {
		t.Errorf("the tap of an approver of both = %+v, %v; want it sent", d, err)
	}
}

// Without a model, /new says there is no conversation to start afresh.
func TestNewWithoutAModel(t *testing.T) {
	h := newWorld(t).start(testPolicy(t, operatorID, approverID), "console")
	r, err := h.Handle(context.Background(), command.Request{User: operatorID, Chat: "1", Line: "/new", Origin: "console:new"})
	if err != nil || !strings.Contains(r.Text, "No model is configured") {
		t.Errorf("/new = %+v, %v; want the plain answer that no model is configured", r, err)
	}
}

func TestDescribeAnHTTPSuccess(t *testing.T) {
	r := action.Result{Status: action.StatusSucceeded, OperationID: "op-1", Evidence: &action.Evidence{HTTPStatus: 201, Ref: "T-1"}}
	if got, want := command.Describe(r), "op-1 done: HTTP 201, ref T-1."; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	r.Evidence.Ref = ""
	if got, want := command.Describe(r), "op-1 done: HTTP 201."; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
