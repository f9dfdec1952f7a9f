package console_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// TestTheConsoleAsksTheCodeAfterYes: where a code is asked, y alone records
// nothing: the console asks the code; a wrong one is refused and the question
// is put again; the right one approves and sends once.
func TestTheConsoleAsksTheCodeAfterYes(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	r := rigtest.New(t, rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(&out)), rigtest.EditPolicy(func(p *policy.Policy) {
		consoleUser(p)
		tp := p.Tools["commit_send_message"]
		tp.StepUp = policy.FactorTOTP
		p.Tools["commit_send_message"] = tp
	}))
	secret, _ := stepup.NewSecret()
	if err := r.Journal.EnrolTOTP(ctx, console.User, secret, false); err != nil {
		t.Fatal(err)
	}
	code, _ := stepup.Code(secret, time.Now())
	wrong := "000000"
	if code == wrong {
		wrong = "000001"
	}
	c := &console.Console{Handler: r.Handler, In: strings.NewReader("/send 222 with a code\ny\n" + wrong + "\ny\n" + code + "\n"), Out: &out}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"Second factor: TOTP. Code from your authenticator app: ", "Refused: wrong code (1 of 5 in a row", "Approved with your code. Sending…"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "→ sent to 222"); n != 1 {
		t.Errorf("sent %d times, want 1:\n%s", n, got)
	}
	ops, _ := r.Journal.Operations(ctx, journal.Filter{})
	if len(ops) != 1 || ops[0].State != journal.Committed {
		t.Errorf("journal = %+v, want one committed operation", ops)
	}
}

// TestTheConsoleSendsAPasskeyToTheBrowser: where a passkey is asked, y
// records nothing and asks no code: the console says the passkey is given on
// the review page, in a browser, and the approval stays waiting.
func TestTheConsoleSendsAPasskeyToTheBrowser(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	r := rigtest.New(t, rigtest.Transport(console.Transport), rigtest.Sender(console.NewPrinter(&out)), rigtest.EditPolicy(func(p *policy.Policy) {
		consoleUser(p)
		tp := p.Tools["commit_send_message"]
		tp.StepUp = policy.FactorPasskey
		p.Tools["commit_send_message"] = tp
	}))
	c := &console.Console{Handler: r.Handler, In: strings.NewReader("/send 222 with a passkey\ny\n"), Out: &out}
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "Second factor: passkey. A terminal cannot take one") || strings.Contains(got, "Code from your authenticator app") {
		t.Errorf("want the passkey sent to the browser, and no code asked, in:\n%s", got)
	}
	ops, _ := r.Journal.Operations(ctx, journal.Filter{})
	if len(ops) != 1 || ops[0].State != journal.AwaitingApproval || strings.Contains(got, "→ sent") {
		t.Errorf("journal = %+v, want one operation awaiting approval, nothing sent:\n%s", ops, got)
	}
}
