package console_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

func run(t *testing.T, input string) (string, *journal.Journal) {
	t.Helper()
	return runIn(t, t.TempDir(), input)
}

// runIn runs a console session over the journal in dir, as `countersign console -data dir`.
func runIn(t *testing.T, dir, input string) (string, *journal.Journal) {
	t.Helper()
	var out bytes.Buffer
	r := rigtest.New(t, rigtest.Dir(dir), rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(&out)), rigtest.EditPolicy(consoleUser))
	c := &console.Console{Handler: r.Handler, In: strings.NewReader(input), Out: &out}
	if err := c.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out.String(), r.Journal
}

// consoleUser makes the console's one user the operator and the approver.
func consoleUser(p *policy.Policy) {
	p.Access = policy.Access{Operators: []policy.UserID{console.User}, Approvers: []policy.UserID{console.User}}
}

func TestApproveSendsOnceWithTarget(t *testing.T) {
	out, j := run(t, "/send 222 Hello  there\ny\n")
	if !strings.Contains(out, "Approve send_message to 222?") {
		t.Errorf("no approval prompt in:\n%s", out)
	}
	if got := strings.Count(out, "→ sent to 222 (message 1):\nHello  there\n"); got != 1 {
		t.Errorf("exact text sent %d times, want 1:\n%s", got, out)
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	if len(ops) != 1 || ops[0].State != journal.Committed {
		t.Errorf("journal = %+v, want one committed operation", ops)
	}
}

func TestRejectAndBadAnswersSendNothing(t *testing.T) {
	out, j := run(t, "/publish @news_room Big news\nperhaps\nn\n")
	if strings.Contains(out, "→ sent") {
		t.Errorf("something was sent:\n%s", out)
	}
	if !strings.Contains(out, "Answer y or n.") || !strings.Contains(out, "rejected by user 0") {
		t.Errorf("want a re-ask and a rejection in:\n%s", out)
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	if len(ops) != 1 || ops[0].State != journal.Rejected {
		t.Errorf("journal = %+v, want one rejected operation", ops)
	}
}

func TestEndOfInputLeavesTheApprovalWaiting(t *testing.T) {
	out, j := run(t, "/send 222 hi\n")
	if !strings.Contains(out, "left waiting for approval") {
		t.Errorf("want a note on the waiting approval in:\n%s", out)
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	if len(ops) != 1 || ops[0].State != journal.AwaitingApproval {
		t.Errorf("journal = %+v, want one operation awaiting approval", ops)
	}
}

func TestALaterSessionAnswersAWaitingApproval(t *testing.T) {
	dir := t.TempDir()
	// Two sessions each end before their approval is answered.
	_, j := runIn(t, dir, "/send 222 hi\n")
	j.Close()
	_, j = runIn(t, dir, "/send 333 hello\n")
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	j.Close()
	if len(ops) != 2 {
		t.Fatalf("operations = %d, want 2", len(ops))
	}
	first, second := ops[1].ID, ops[0].ID // newest first
	out, j := runIn(t, dir, "/approve "+first+"\n/reject "+second+"\n/approve "+first+"\n/approve op-nope\n")
	for _, want := range []string{"Waiting for your approval from before: ", "→ sent to 222 (message 1):\nhi\n",
		"No approval waits for " + first, "No approval waits for op-nope"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "→ sent to 333") || strings.Count(out, "→ sent") != 1 {
		t.Errorf("want exactly the approved one sent:\n%s", out)
	}
	for id, want := range map[string]journal.State{first: journal.Committed, second: journal.Rejected} {
		if op, _ := j.Operation(context.Background(), id); op.State != want {
			t.Errorf("%s is %s, want %s", id, op.State, want)
		}
	}
}

func TestMalformedCommandsLoseNothing(t *testing.T) {
	out, _ := run(t, "/send\nhello\n/launch now\n/draft a plan\n/ops\n")
	for _, want := range []string{"usage: /send <chat_id> <text>", "plain text goes to a model, and this bot has none: set ANTHROPIC_API_KEY",
		"unknown command /launch", "Draft op-", "reply \"a plan\""} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// At the prompt, e asks for the corrected text: a new prompt shows it, and y
// sends the corrected text alone; the journal keeps the text it replaced.
func TestTheConsoleEditsBeforeItApproves(t *testing.T) {
	out, j := run(t, "/send 222 helo\ne\nhello\\nworld\ny\n")
	if !strings.Contains(out, "[y/n/e to edit the text first]") || !strings.Contains(out, "the payload was edited by 0 before approval") {
		t.Errorf("want the edit offered and done in:\n%s", out)
	}
	if strings.Count(out, "→ sent") != 1 || !strings.Contains(out, "→ sent to 222 (message 1):\nhello\nworld\n") {
		t.Errorf("want the edited text sent once in:\n%s", out)
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	edits, _ := j.Edits(context.Background(), ops[0].ID)
	if len(edits) != 1 || edits[0].Old.Text != "helo" {
		t.Errorf("edits = %+v, want the old text kept", edits)
	}
}

// /approve and /reject without the one operation id they take say so, and how
// to find it, instead of "unknown command"; /help lists them, after /pending.
func TestDecisionsAreExplained(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
		not        string
	}{
		{"approve alone", "/approve", []string{"/approve needs the id of one operation waiting for approval: /approve <op_id> (/pending lists them)"}, "unknown command"},
		{"reject alone", "/reject  ", []string{"/reject needs the id of one operation waiting for approval: /reject <op_id>"}, "unknown command"},
		{"two ids", "/approve op-a op-b", []string{"/approve needs the id of one operation"}, "No approval waits"},
		{"help", "/help", []string{"/pending: what waits for approval or verification\n/approve <op_id>: approve an operation waiting for your approval",
			"/reject <op_id>: reject it\n", "/send <chat_id> <text>: send a message"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := run(t, tt.line+"\n")
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, tt.not) {
				t.Errorf("output says %q:\n%s", tt.not, out)
			}
		})
	}
}

// A text past one message is said, before the answer, to go out as the
// messages it will be, as the Telegram card says; one that fits is not.
func TestALongTextIsSaidToGoAsSeveralMessages(t *testing.T) {
	long := strings.Repeat("word ", 1051) // 5,255 characters: two messages
	out, _ := run(t, "/send 222 "+long+"\nn\n")
	if !strings.Contains(out, "It goes out as 2 messages") {
		t.Errorf("the prompt does not say the text goes as two messages:\n%.400s", out)
	}
	if out, _ := run(t, "/send 222 short\nn\n"); strings.Contains(out, "It goes out as") {
		t.Errorf("a one-message text is said to go as several:\n%s", out)
	}
}
