package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/countersign/countersign/telegram/standin"
)

// LoseCommand is the line that arms LoseNextAnswer in the terminal; the bot
// never sees it. No bot command can carry a hyphen, so it is never one of
// theirs.
const LoseCommand = "/demo-unknown"

// Terminal runs the demo in a terminal: each line read from in is what the
// person writes in their private chat with the bot (a number taps the button
// drawn with it; a and r tap the newest card's Approve and Reject; LoseCommand
// arms LoseNextAnswer), and out shows both chats as the bot writes and edits
// them, the answers to taps, and each unknown outcome's envelope as the vault
// holds it. It returns nil when in ends or ctx does, and an error when the
// view cannot be read.
func (s *Scene) Terminal(ctx context.Context, in io.Reader, out io.Writer) error {
	t := &terminal{s: s, out: out, shown: map[msgKey]shown{}, buttons: map[int]tap{}, notes: map[string]string{}}
	t.intro()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drawn := make(chan error, 1)
	go func() { drawn <- t.follow(ctx) }()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<20) // a long pasted text is a line, not the end of the demo
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cancel()
				return quiet(<-drawn)
			}
			t.line(line)
		case err := <-drawn:
			return quiet(err)
		case <-ctx.Done():
			return quiet(<-drawn)
		}
	}
}

// quiet is err, except the end of the demo's context or server, which is how
// the demo ends.
func quiet(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, standin.ErrClosed) {
		return nil
	}
	return err
}

// terminal is the state of what a Terminal has drawn.
type terminal struct {
	s   *Scene
	mu  sync.Mutex // over out and the rest: the drawing and the input take turns
	out io.Writer
	// shown is what each message looked like when drawn, to draw it again
	// when the bot edits it.
	shown map[msgKey]shown
	// buttons are the live buttons by the number drawn with them; next is
	// the number of the next one drawn.
	buttons map[int]tap
	next    int
	notes   map[string]string // each envelope's text as last drawn, by operation
	answers int               // how many answers to taps were drawn
	prompt  int               // the bot's message asking for a reply, 0 when none
	code    bool              // the prompt asks a code: a number typed is the reply, not a button
}

// shown is a message as drawn: all it showed, its text, and whether its lost
// answer was said.
type shown struct {
	look, text string
	lost       bool
}

type msgKey struct {
	chat int64
	id   int
}

// tap is a button drawn with a number.
type tap struct {
	chat   int64
	msg    int
	text   string
	data   string
	number int
}

func (t *terminal) intro() {
	s := t.s
	fmt.Fprintf(t.out, `Countersign demo: the real bot, talking to a Telegram of its own in this process.
You are user %d, the bot's operator and approver; %s is a chat it can send to.
Type what you would write to the bot:
  /send %d Hello     ask for a send: an approval card comes back
  /publish %d Hi     a post that asks, after Approve, a code from your authenticator app
  1, 2, ...          tap the button drawn with that number (a: Approve, r: Reject)
  %s      lose Telegram's answer to the next send to %d: its outcome becomes unknown
  /help              the bot's own commands
Ctrl-D ends the demo.

`, s.You, s.title(s.Target), s.Target, s.Target, LoseCommand, s.Target)
}

// follow draws the view each time it changes, until ctx ends.
func (t *terminal) follow(ctx context.Context) error {
	for {
		v, err := t.s.View()
		if err != nil {
			return err
		}
		t.draw(v)
		drawn := fingerprint(v)
		err = t.s.Server.WaitFor(ctx, func(*standin.Server) bool {
			now, err := t.s.View()
			return err != nil || fingerprint(now) != drawn
		})
		if err != nil {
			return err
		}
	}
}

// fingerprint tells views apart.
func fingerprint(v View) string {
	b, _ := json.Marshal(v) // plain data: it always encodes
	return string(b)
}

// draw prints what changed since the last view drawn.
func (t *terminal) draw(v View) {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := map[msgKey]bool{}
	for _, c := range v.Chats {
		for _, b := range c.Messages {
			live[msgKey{c.ID, b.ID}] = true
			if !b.Mine {
				t.drawBubble(c, b)
			}
		}
	}
	for n, bt := range t.buttons {
		if !live[msgKey{bt.chat, bt.msg}] { // deleted: its buttons went with it
			delete(t.buttons, n)
		}
	}
	for _, text := range v.Answers[min(t.answers, len(v.Answers)):] {
		fmt.Fprintf(t.out, "[the bot answers your tap] %s\n", text)
	}
	t.answers = len(v.Answers)
	for _, e := range v.Envelopes {
		if t.notes[e.Operation] == e.Markdown {
			continue
		}
		what := "the envelope of its unknown outcome is in the vault"
		if _, ok := t.notes[e.Operation]; ok {
			what = "its envelope changed"
		}
		t.notes[e.Operation] = e.Markdown
		fmt.Fprintf(t.out, "[vault] %s: %s, %s\n%s", e.Operation, what, e.Path, indent(e.Markdown))
	}
}

// drawBubble prints a message of the bot that is new or changed since drawn,
// its buttons numbered afresh. An edit that adds lines to the end (a card
// that records its decision) prints what it added. A message whose answer was
// lost says so once.
func (t *terminal) drawBubble(c Chat, b Bubble) {
	key := msgKey{c.ID, b.ID}
	old, seen := t.shown[key]
	lost := b.Lost && !old.lost
	b.Lost = false // not a change of the message: said on its own line
	look := fingerprint(View{Chats: []Chat{{Messages: []Bubble{b}}}})
	t.shown[key] = shown{look: look, text: b.Text, lost: old.lost || lost}
	where := "you"
	if c.ID != t.s.You {
		where = c.Title
	}
	if old.look != look {
		t.drawChange(c, b, where, old, seen)
	}
	if lost {
		fmt.Fprintf(t.out, "  (Telegram took this message to %s, and its answer to the bot was lost)\n", where)
	}
}

// drawChange prints b, new or edited since old was drawn.
func (t *terminal) drawChange(c Chat, b Bubble, where string, old shown, seen bool) {
	for n, bt := range t.buttons {
		if bt.chat == c.ID && bt.msg == b.ID {
			delete(t.buttons, n)
		}
	}
	header, text := "[bot → "+where+"]", b.Text
	if b.Media != "" {
		text = "(" + b.Media + ") " + text
	}
	if seen {
		header = "[bot → " + where + ", edited]"
		if added, ok := strings.CutPrefix(b.Text, old.text); ok && old.text != "" && b.Media == "" {
			header = "[bot → " + where + ", edited: adds]"
			text = "… " + strings.TrimLeft(added, "\n")
		}
	}
	fmt.Fprintf(t.out, "%s\n%s", header, indent(text))
	if line := t.numberButtons(c.ID, b); line != "" {
		fmt.Fprintf(t.out, "  %s\n", line)
	}
	if b.AsksReply && c.ID == t.s.You {
		t.prompt, t.code = b.ID, AsksCode(b)
		fmt.Fprintln(t.out, "  (your next line is the reply)")
		if a, ok := t.s.Code(); ok && AsksCode(b) {
			fmt.Fprintf(t.out, "  (your authenticator app shows %s now, for %d s more: type it)\n", a.Code, a.Left)
		}
	}
}

// numberButtons gives b's buttons their numbers and returns them as a line.
func (t *terminal) numberButtons(chat int64, b Bubble) string {
	var parts []string
	for _, row := range b.Buttons {
		for _, k := range row {
			if k.Data == "" { // a link: shown, not tapped here
				parts = append(parts, fmt.Sprintf("[%s: %s]", k.Text, k.URL))
				continue
			}
			t.next++
			t.buttons[t.next] = tap{chat: chat, msg: b.ID, text: k.Text, data: k.Data, number: t.next}
			parts = append(parts, fmt.Sprintf("[%d] %s", t.next, k.Text))
		}
	}
	return strings.Join(parts, "  ")
}

func indent(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// line acts on one line the person typed.
func (t *terminal) line(text string) {
	text = strings.TrimSpace(text)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case text == "":
	case text == LoseCommand:
		t.lose()
	case text == "a" || text == "r":
		label := map[string]string{"a": "Approve", "r": "Reject"}[text]
		t.tapNewest(label)
	case isNumber(text) && !(t.code && t.prompt != 0):
		n, _ := strconv.Atoi(text)
		bt, ok := t.buttons[n]
		if !ok {
			fmt.Fprintf(t.out, "(no button %d now: a decided card has none)\n", n)
			return
		}
		t.press(bt)
	default:
		reply := t.prompt
		t.prompt, t.code = 0, false
		t.s.Say(text, reply)
	}
}

func (t *terminal) lose() {
	if !t.s.LoseNextAnswer() {
		fmt.Fprintln(t.out, "(already armed: the next send to the target loses its answer)")
		return
	}
	fmt.Fprintf(t.out, "(armed: Telegram will take the next message to %s and its answer will be lost; /send %d something, and approve it)\n",
		t.s.title(t.s.Target), t.s.Target)
}

// tapNewest presses the newest live button in the person's chat whose text
// has label.
func (t *terminal) tapNewest(label string) {
	best := tap{}
	for _, bt := range t.buttons {
		if bt.chat == t.s.You && strings.Contains(bt.text, label) && bt.number > best.number {
			best = bt
		}
	}
	if best.number == 0 {
		fmt.Fprintf(t.out, "(no card with %s open)\n", label)
		return
	}
	t.press(best)
}

func (t *terminal) press(bt tap) {
	fmt.Fprintf(t.out, "(you tap %s)\n", bt.text)
	t.s.Tap(bt.chat, bt.msg, bt.data)
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-")
}
