// Package console is the operator in a terminal, with no Telegram: a line is a
// command, an approval is a y/n question on the next line, and a send is printed
// with its target. It is how a new user tries the product in a minute.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/tools"
)

// User is the user id the console speaks as. The terminal's owner is the operator
// and the approver: the wiring adds this id to both access lists.
const User int64 = 0

// Printer is the console's Sender: it prints each message with its target and
// confirms it with an increasing message id.
type Printer struct {
	mu   sync.Mutex
	out  io.Writer
	next int64
}

var _ tools.Sender = (*Printer)(nil)

// NewPrinter returns a Printer writing to out.
func NewPrinter(out io.Writer) *Printer { return &Printer{out: out} }

// Send implements tools.Sender.
func (p *Printer) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	if _, err := fmt.Fprintf(p.out, "→ sent to %s (message %d):\n%s\n", m.Target, p.next, m.Text); err != nil {
		return tools.Delivery{}, fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return tools.Delivery{ChatID: m.Target, MessageID: p.next}, nil
}

// Console reads commands from In and writes replies to Out.
type Console struct {
	Handler *command.Handler
	In      io.Reader
	Out     io.Writer
}

// Run serves commands until the input ends (nil) or ctx is done (ctx.Err()).
func (c *Console) Run(ctx context.Context) error {
	lines := bufio.NewScanner(c.In)
	lines.Buffer(make([]byte, 64*1024), 1<<20)
	fmt.Fprintln(c.Out, "Countersign console. /help lists the commands; end of input quits.")
	for {
		fmt.Fprint(c.Out, "> ")
		if !lines.Scan() {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		line := lines.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		reply, err := c.Handler.Handle(ctx, command.Request{User: User, Chat: "console", Line: line})
		if errors.Is(err, command.ErrUsage) {
			fmt.Fprintln(c.Out, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		if err := c.answer(ctx, lines, reply); err != nil {
			return err
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("console: read: %w", err)
	}
	fmt.Fprintln(c.Out)
	return nil
}

// answer prints a reply and asks for each approval it carries.
func (c *Console) answer(ctx context.Context, lines *bufio.Scanner, reply command.Reply) error {
	if reply.Text != "" {
		fmt.Fprintln(c.Out, reply.Text)
	}
	for _, a := range reply.Approvals {
		if err := c.ask(ctx, lines, a); err != nil {
			return err
		}
	}
	return nil
}

// ask puts one approval to the terminal's owner, the console's approver.
func (c *Console) ask(ctx context.Context, lines *bufio.Scanner, a command.Approval) error {
	fmt.Fprintf(c.Out, "Approve %s to %s?\n%s\n  operation %s, payload %s, %s, expires %s\n",
		a.Operation.Payload.Action, a.Operation.Payload.Target, indent(a.Operation.Payload.Text),
		a.Operation.ID, a.PayloadSHA256[:12], a.Verdict, a.Expires.Local().Format(time.DateTime))
	for {
		fmt.Fprint(c.Out, "[y/n] ")
		if !lines.Scan() {
			break
		}
		var approve bool
		switch strings.ToLower(strings.TrimSpace(lines.Text())) {
		case "y", "yes":
			approve = true
		case "n", "no":
		default:
			fmt.Fprintln(c.Out, "Answer y or n.")
			continue
		}
		decided, err := c.Handler.Decide(ctx, a.ID, User, approve)
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		fmt.Fprintln(c.Out, decided.Text)
		return nil
	}
	fmt.Fprintf(c.Out, "\n%s left waiting for approval.\n", a.Operation.ID)
	return nil
}

func indent(s string) string { return "  | " + strings.ReplaceAll(s, "\n", "\n  | ") }
