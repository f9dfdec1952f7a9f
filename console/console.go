// Package console is the operator in a terminal, with no Telegram: a line is a
// command, an approval is a y/n question on the next line, and a send is printed
// with its target. It is how a new user tries the product in a minute.
package console

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// Transport is the name the console's operations are recorded under: they are
// delivered by its Printer, and only a console commits them. It is also the
// console's surface name.
const Transport = "console"

// User is the user id the console speaks as. The terminal's owner is the operator
// and the approver: the wiring adds this id to both access lists.
const User policy.UserID = 0

// Printer is the console's Sender: it prints each message with its target and
// confirms it with an increasing message id.
type Printer struct {
	mu     sync.Mutex
	out    io.Writer
	next   int64
	pinned map[string]int64 // the last message pinned here, by chat
}

var _ tools.Sender = (*Printer)(nil)

// NewPrinter returns a Printer writing to out.
func NewPrinter(out io.Writer) *Printer { return &Printer{out: out} }

// Send implements tools.Sender.
func (p *Printer) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	if _, err := fmt.Fprintf(p.out, "→ sent to %s (message %d):\n%s\n", m.Target, p.next, command.Visible(m.Text)); err != nil {
		return tools.Delivery{}, fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return tools.Delivery{ChatID: m.Target, MessageID: p.next}, nil
}

var _ tools.Uploader = (*Printer)(nil)

// Upload implements tools.Uploader: the console prints each file's name, size
// and hash, and the caption, one message each.
func (p *Printer) Upload(ctx context.Context, u tools.Upload) ([]tools.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []tools.Delivery
	for i, f := range u.Files {
		caption := f.Caption
		if i == 0 && caption == "" {
			caption = u.Caption
		}
		p.next++
		if _, err := fmt.Fprintf(p.out, "→ sent to %s (message %d): %s\n%s\n", u.Target, p.next, f.Describe(), command.Visible(caption)); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
			}
			return nil, fmt.Errorf("console: %w: %w", tools.ErrOutcomeUnknown, err)
		}
		out = append(out, tools.Delivery{ChatID: u.Target, MessageID: p.next})
	}
	return out, nil
}

var (
	_ tools.Poller   = (*Printer)(nil)
	_ tools.Reposter = (*Printer)(nil)
)

// SendPoll implements tools.Poller: the console prints the question and the
// options.
func (p *Printer) SendPoll(ctx context.Context, target, question string, poll action.Poll) (tools.Delivery, error) {
	var b strings.Builder
	for i, o := range poll.Options {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, command.Visible(o))
	}
	return p.print(target, "poll: "+command.Visible(question)+b.String())
}

// Repost implements tools.Reposter: the console prints what was forwarded or
// copied.
func (p *Printer) Repost(ctx context.Context, target, from string, messageID int64, copy bool) (tools.Delivery, error) {
	verb := "forward"
	if copy {
		verb = "copy"
	}
	return p.print(target, fmt.Sprintf("%s of message %d in %s", verb, messageID, from))
}

// print prints one new message to target.
func (p *Printer) print(target, what string) (tools.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	if _, err := fmt.Fprintf(p.out, "→ sent to %s (message %d): %s\n", target, p.next, what); err != nil {
		return tools.Delivery{}, fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return tools.Delivery{ChatID: target, MessageID: p.next}, nil
}

// Edit implements tools.Editor: the console prints the message's new text.
func (p *Printer) Edit(ctx context.Context, e tools.Edit) (tools.Delivery, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintf(p.out, "→ edited message %d in %s:\n%s\n", e.MessageID, e.Target, command.Visible(e.Text)); err != nil {
		return tools.Delivery{}, fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return tools.Delivery{ChatID: e.Target, MessageID: e.MessageID}, nil
}

// Delete implements tools.Deleter: the console says which message is gone.
func (p *Printer) Delete(ctx context.Context, target string, messageID int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := fmt.Fprintf(p.out, "→ deleted message %d in %s\n", messageID, target); err != nil {
		return fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return nil
}

// Pin implements tools.Pinner: the console says which message is pinned.
func (p *Printer) Pin(ctx context.Context, target string, messageID int64, notify bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pinned == nil {
		p.pinned = map[string]int64{}
	}
	p.pinned[target] = messageID
	if _, err := fmt.Fprintf(p.out, "→ pinned message %d in %s (notify: %v)\n", messageID, target, notify); err != nil {
		return fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return nil
}

// Unpin implements tools.Pinner.
func (p *Printer) Unpin(ctx context.Context, target string, messageID int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pinned[target] == messageID {
		delete(p.pinned, target)
	}
	if _, err := fmt.Fprintf(p.out, "→ unpinned message %d in %s\n", messageID, target); err != nil {
		return fmt.Errorf("console: %w: %w", tools.ErrNotSent, err)
	}
	return nil
}

// Pinned implements tools.Pinner: what this console pinned last in target.
func (p *Printer) Pinned(ctx context.Context, target string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pinned[target], nil
}

// Console reads commands from In and writes replies to Out.
type Console struct {
	Handler *command.Handler
	In      io.Reader
	Out     io.Writer

	// asked are the operations whose approvals the console's own requests
	// asked for (ApprovalNeeded events), for the reply to put to the terminal
	// once it is printed.
	mu    sync.Mutex
	asked []string
}

// Run serves commands until the input ends (nil) or ctx is done (ctx.Err()).
// Lines typed while a command runs wait their turn, except /stop, which ends the
// model's running turn at once.
func (c *Console) Run(ctx context.Context) error {
	in := readLines(c.In)
	defer close(in.done)
	c.Out = &syncWriter{w: c.Out} // events print from the publisher's goroutine
	defer c.Handler.Operator.Subscribe(func(ev operator.Event) { c.onEvent(ev) })()
	fmt.Fprintln(c.Out, "Countersign console. /help lists the commands; end of input quits.")
	if err := c.tellWaiting(ctx); err != nil {
		return err
	}
	for {
		fmt.Fprint(c.Out, "> ")
		l, ok := in.next(ctx)
		if !ok {
			break
		}
		if l.refused != "" {
			fmt.Fprintln(c.Out, l.refused)
			continue
		}
		line := l.text
		if strings.TrimSpace(line) == "" {
			continue
		}
		if opID, approve, ok := decision(line); ok {
			if err := c.decide(ctx, opID, approve); err != nil {
				return err
			}
			continue
		}
		if use := decisionUsage(line); use != "" {
			fmt.Fprintln(c.Out, use)
			continue
		}
		if isHelp(line) {
			fmt.Fprint(c.Out, help())
			continue
		}
		c.takeAsked() // a stopped run's, shown at start (tellWaiting)
		reply, err := c.handle(ctx, in, line)
		if errors.Is(err, command.ErrUsage) {
			fmt.Fprintln(c.Out, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		if err := c.answer(ctx, in, reply); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := in.err(); err != nil {
		return fmt.Errorf("console: read: %w", err)
	}
	fmt.Fprintln(c.Out)
	return nil
}

// handle runs one line while still reading: a /stop typed meanwhile is carried
// out at once; any other line is kept for after.
func (c *Console) handle(ctx context.Context, in *input, line string) (command.Reply, error) {
	type result struct {
		reply command.Reply
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := c.Handler.Handle(ctx, command.Request{User: User, Chat: "console", Line: line})
		done <- result{reply, err}
	}()
	for {
		select {
		case r := <-done:
			return r.reply, r.err
		case l, ok := <-in.lines:
			if !ok {
				in.lines = nil // input ended: let the command finish
				continue
			}
			if l.refused != "" || !isStop(l.text) {
				in.queued = append(in.queued, l)
				continue
			}
			if r, err := c.Handler.Handle(ctx, command.Request{User: User, Chat: "console", Line: l.text}); err == nil && r.Text != "" {
				fmt.Fprintln(c.Out, r.Text)
			}
		}
	}
}

func isStop(line string) bool { return strings.TrimSpace(line) == "/stop" }

// input is the terminal's lines, read ahead so that a /stop can be seen while a
// command runs; queued are lines read ahead and not yet taken.
type input struct {
	lines chan line
	done  chan struct{} // closed when Run returns: the reader stops

	queued  []line
	mu      sync.Mutex
	readErr error
}

// line is one line of input without its line break; refused, when set, says why
// it is not carried out, and text is then empty.
type line struct {
	text, refused string
}

// maxLine is the longest line read, in bytes; a longer one is refused whole.
const maxLine = 1 << 20

// cutLengths are the lengths, in bytes without the line break, of a line a terminal
// in canonical mode cut: Linux keeps 4095 bytes of a longer line and its newline
// (4096 without one), dropping the rest without a word. Such a line may not be what
// was typed or pasted, so it is refused rather than approved as it stands.
var cutLengths = map[int]bool{4095: true, 4096: true}

func readLines(r io.Reader) *input {
	in := &input{lines: make(chan line), done: make(chan struct{})}
	go func() {
		br := bufio.NewReaderSize(r, 64*1024)
		var err error
		for err == nil {
			var l line
			var n int
			l.text, n, err = readLine(br)
			switch {
			case n == 0 && err != nil:
				continue // the end of input, or a failed read, after the last line
			case n > maxLine:
				l = line{refused: fmt.Sprintf("Refused, nothing was done: this line is %d bytes, more than the %d a line may hold. Nothing of it was read.", n, maxLine)}
			case cutLengths[n]:
				l = line{refused: fmt.Sprintf("Refused, nothing was done: this line is %d bytes, the length at which a terminal cuts a longer line without a word, so it may not be all you typed or pasted. Shorten or split the text.", n)}
			}
			select {
			case in.lines <- l:
			case <-in.done:
				return
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		in.mu.Lock()
		in.readErr = err
		in.mu.Unlock()
		close(in.lines)
	}()
	return in
}

// readLine reads one line and returns it without its line break ("\n" or
// "\r\n"), with its length in bytes; a line longer than maxLine is read to its
// end and dropped, and only its length is returned. err is io.EOF after the last
// line, or the read's error.
func readLine(br *bufio.Reader) (text string, n int, err error) {
	var b, chunk []byte
	for {
		chunk, err = br.ReadSlice('\n')
		n += len(chunk)
		if n <= maxLine+len("\r\n") {
			b = append(b, chunk...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			break
		}
	}
	if n > maxLine+len("\r\n") {
		return "", n - len(chunkEnd(chunk)), err
	}
	b = b[:len(b)-len(chunkEnd(b))]
	if len(b) > maxLine {
		return "", len(b), err
	}
	return string(b), len(b), err
}

// chunkEnd is the line break that ends b: "\r\n", "\n" or none.
func chunkEnd(b []byte) string {
	switch {
	case bytes.HasSuffix(b, []byte("\r\n")):
		return "\r\n"
	case bytes.HasSuffix(b, []byte("\n")):
		return "\n"
	}
	return ""
}

// next is the next line, false at the end of input or when ctx ends.
func (in *input) next(ctx context.Context) (line, bool) {
	if len(in.queued) > 0 {
		l := in.queued[0]
		in.queued = in.queued[1:]
		return l, true
	}
	if in.lines == nil {
		return line{}, false
	}
	select {
	case l, ok := <-in.lines:
		if !ok {
			in.lines = nil
		}
		return l, ok
	case <-ctx.Done():
		return line{}, false
	}
}

func (in *input) err() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.readErr
}

// answer prints a reply and asks for each approval its request asked for.
func (c *Console) answer(ctx context.Context, in *input, reply command.Reply) error {
	if reply.Text != "" {
		fmt.Fprintln(c.Out, reply.Text)
	}
	return c.askAll(ctx, in, c.takeAsked())
}

// askAll puts the approvals operations opIDs wait on to the terminal, one by
// one; one decided meanwhile is not asked.
func (c *Console) askAll(ctx context.Context, in *input, opIDs []string) error {
	for _, id := range opIDs {
		a, err := c.Handler.Approval(ctx, id)
		if errors.Is(err, journal.ErrNotFound) {
			continue // decided meanwhile: nothing to ask
		}
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		if err := c.ask(ctx, in, a); err != nil {
			return err
		}
	}
	return nil
}

// takeAsked returns and forgets the operations whose approvals were asked for
// since it last ran.
func (c *Console) takeAsked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.asked
	c.asked = nil
	return ids
}

// ask puts one approval to the terminal's owner, the console's approver: the
// text with its length as Telegram counts it, its control and invisible characters
// written as escapes, and for a parse mode what the recipient will see and where
// its links go, as the Telegram card shows them.
func (c *Console) ask(ctx context.Context, in *input, a command.Approval) error {
	p := a.Operation.Payload
	fmt.Fprintf(c.Out, "Approve %s to %s? (%d characters)\n", p.Action, p.Target, command.Characters(p))
	if a.AskedBy != "" {
		fmt.Fprintf(c.Out, "  asked by %s\n", command.Visible(a.AskedBy))
	}
	if facts := command.Facts(a.Shown); facts != "" {
		fmt.Fprintln(c.Out, indent(facts))
	}
	if label := command.TextLabel(a.Shown, p); label != "" {
		fmt.Fprintln(c.Out, indent(label+":\n"+command.Visible(p.Text)))
	}
	if n := len(tools.Previews(p)); p.Request == nil && n > 1 {
		// As the Telegram card says it: a text past one message goes as several.
		fmt.Fprintf(c.Out, "  It goes out as %d messages, in this order (Telegram takes at most %d characters a message).\n", n, tools.MaxMessageUnits)
	}
	if note := command.EscapesNote(p.Text, true); note != "" {
		fmt.Fprintln(c.Out, "  "+note)
	}
	if r := command.Rendering(p.Text, p.ParseMode); r != "" {
		fmt.Fprintln(c.Out, indent(r))
	}
	fmt.Fprintf(c.Out, "  operation %s, payload %s, %s, expires %s\n",
		a.Operation.ID, a.PayloadSHA256[:12], a.Verdict, a.Expires.Local().Format(time.DateTime))
	if line := operator.QuorumLine(a.Approval); line != "" {
		fmt.Fprintf(c.Out, "  %s: this terminal's answer counts as one\n", line)
	}
	prompt := "[y/n] "
	if a.Editable {
		prompt = "[y/n/e to edit the text first] "
	}
	for {
		fmt.Fprint(c.Out, prompt)
		l, ok := in.next(ctx)
		if !ok {
			break
		}
		if l.refused != "" {
			fmt.Fprintln(c.Out, l.refused)
			continue
		}
		var approve bool
		switch strings.ToLower(strings.TrimSpace(l.text)) {
		case "y", "yes":
			approve = true
		case "n", "no":
		case "e", "edit":
			if !a.Editable {
				fmt.Fprintln(c.Out, "Answer y or n: this action has no text to edit.")
				continue
			}
			return c.amend(ctx, in, a)
		default:
			fmt.Fprintln(c.Out, "Answer y or n.")
			continue
		}
		decided, err := c.Handler.Decide(ctx, a.ID, User, approve)
		if err != nil {
			return fmt.Errorf("console: %w", err)
		}
		if decided.StepUp != nil {
			// y alone recorded nothing: the console asks for the factor
			// the operator's refusal names, never one read off the
			// approval, which a policy may ask more than since.
			done, err := c.confirm(ctx, in, a, decided.StepUp.Factor)
			if done || err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(c.Out, decided.Text)
		return nil
	}
	fmt.Fprintf(c.Out, "\n%s left waiting for approval; a later session answers it with /approve or /reject %s.\n", a.Operation.ID, a.Operation.ID)
	return nil
}

// confirm asks the terminal's owner for factor, the second factor the
// operator refused their y on approval a without, and approves with it
// (command.Handler.Confirm). It reports whether the question is over: the
// approval was recorded, or it asks a passkey, which a terminal cannot give
// (it stays waiting); a refused code (wrong, used, a locked factor) leaves
// it waiting, and the question is put again.
func (c *Console) confirm(ctx context.Context, in *input, a command.Approval, factor policy.Factor) (bool, error) {
	if factor == policy.FactorPasskey {
		c.passkeyElsewhere(a)
		return true, nil
	}
	fmt.Fprintf(c.Out, "Second factor: %s. Code from your authenticator app: ", factor.Name())
	l, ok := in.next(ctx)
	if !ok {
		return false, nil
	}
	if l.refused != "" {
		fmt.Fprintln(c.Out, l.refused)
		return false, nil
	}
	r, err := c.Handler.Confirm(ctx, command.Confirmation{User: User, Approval: a.ID, Code: strings.TrimSpace(l.text)})
	if err != nil {
		return false, fmt.Errorf("console: %w", err)
	}
	fmt.Fprintln(c.Out, r.Text)
	if r.Result != nil {
		fmt.Fprintln(c.Out, command.Describe(*r.Result))
		return true, nil
	}
	if r.StepUp != nil && r.StepUp.Factor == policy.FactorPasskey {
		c.passkeyElsewhere(a) // the code was refused: a passkey is asked now
		return true, nil
	}
	now, err := c.Handler.Journal.Approval(ctx, a.ID)
	if err != nil {
		return false, fmt.Errorf("console: %w", err)
	}
	voted := slices.ContainsFunc(now.Votes, func(v journal.Vote) bool { return v.By == User })
	return now.Decision != journal.Pending || voted, nil
}

// passkeyElsewhere says where approval a's passkey is given: a terminal has
// no WebAuthn, the approver's browser does.
func (c *Console) passkeyElsewhere(a command.Approval) {
	fmt.Fprintf(c.Out, "Second factor: passkey. A terminal cannot take one: approve %s on the review page, in a browser, with your passkey (/review %s gives the link). Nothing is recorded here.\n", a.Operation.ID, a.Operation.ID)
}

// amend reads the corrected text of approval a's request, one line (\n
// written as two characters stands for a line break), and puts the new approval
// to the terminal: the old one is void once the edit is journaled.
func (c *Console) amend(ctx context.Context, in *input, a command.Approval) error {
	fmt.Fprint(c.Out, "New text (one line; \\n for a line break): ")
	l, ok := in.next(ctx)
	if !ok {
		return nil
	}
	if l.refused != "" {
		fmt.Fprintln(c.Out, l.refused)
		return c.ask(ctx, in, a)
	}
	c.takeAsked()
	reply, err := c.Handler.Amend(ctx, a.ID, User, strings.ReplaceAll(l.text, `\n`, "\n"))
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	asked := c.takeAsked()
	fmt.Fprintln(c.Out, reply.Text)
	if len(asked) == 0 { // refused: the card stands
		return c.ask(ctx, in, a)
	}
	return c.askAll(ctx, in, asked)
}

// tellWaiting says which approvals an earlier session left waiting, and how to
// answer them here.
func (c *Console) tellWaiting(ctx context.Context) error {
	ops, err := c.Handler.Journal.Operations(ctx, journal.Filter{Transport: Transport, States: []journal.State{journal.AwaitingApproval}})
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	if len(ops) > 0 {
		ids := make([]string, len(ops))
		for i, op := range ops {
			ids[i] = op.ID
		}
		fmt.Fprintf(c.Out, "Waiting for your approval from before: %s. Answer with /approve <op_id> or /reject <op_id>; /pending lists them.\n", strings.Join(ids, ", "))
	}
	return nil
}

// decision reads the console's own answer to an approval left waiting:
// "/approve <op_id>" or "/reject <op_id>". The terminal's owner is the approver,
// so typing it is their tap.
func decision(line string) (opID string, approve, ok bool) {
	fields := strings.Fields(line)
	if len(fields) != 2 || (fields[0] != "/approve" && fields[0] != "/reject") {
		return "", false, false
	}
	return fields[1], fields[0] == "/approve", true
}

// decisionUsage is what to say of a /approve or /reject line that is not one
// decision("/approve" alone, or with more than the id), or "" for another line.
func decisionUsage(line string) string {
	fields := strings.Fields(line)
	if len(fields) == 0 || (fields[0] != "/approve" && fields[0] != "/reject") {
		return ""
	}
	return fmt.Sprintf("%s needs the id of one operation waiting for approval: %s <op_id> (/pending lists them)", fields[0], fields[0])
}

// decisionHelp are the lines /help adds in the console, after /pending: the
// console's own answers to an approval left waiting.
const decisionHelp = "/approve <op_id>: approve an operation waiting for your approval (the terminal's owner is its approver)\n" +
	"/reject <op_id>: reject it\n"

func isHelp(line string) bool { return strings.TrimSpace(line) == "/help" }

// help is the console's /help: every command, with the console's own answers
// to a waiting approval after /pending.
func help() string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(command.Help(), "\n") {
		b.WriteString(l)
		if strings.HasPrefix(l, "/pending") {
			b.WriteString(decisionHelp)
		}
	}
	return b.String()
}

func (c *Console) decide(ctx context.Context, opID string, approve bool) error {
	a, err := c.Handler.Operator.PendingApproval(ctx, opID)
	if errors.Is(err, journal.ErrNotFound) {
		fmt.Fprintf(c.Out, "No approval waits for %s.\n", opID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	reply, err := c.Handler.Decide(ctx, a.ID, User, approve)
	if err != nil {
		return fmt.Errorf("console: %w", err)
	}
	fmt.Fprintln(c.Out, reply.Text)
	return nil
}

// onEvent takes an approval of the console's transport: one its own request
// asked for is put to the terminal after that request's reply (answer); one
// another surface (an outside agent) asked for is said on a line of its own,
// with how to answer it here.
func (c *Console) onEvent(ev operator.Event) {
	op := ev.Operation
	if ev.Kind != operator.ApprovalNeeded || op.Transport != Transport {
		return
	}
	if op.Surface == Transport {
		c.mu.Lock()
		c.asked = append(c.asked, op.ID)
		c.mu.Unlock()
		return
	}
	fmt.Fprintf(c.Out, "\n%s asks to %s to %s: %q. Answer with /approve %s or /reject %s.\n",
		orSomeone(op.Surface), op.Payload.Action, op.Payload.Target, command.Excerpt(op.Payload.Text, 60), op.ID, op.ID)
}

func orSomeone(surface string) string {
	if surface == "" {
		return "another surface"
	}
	return surface
}

// syncWriter serializes writes from the console and from operator events.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func indent(s string) string { return "  | " + strings.ReplaceAll(s, "\n", "\n  | ") }
