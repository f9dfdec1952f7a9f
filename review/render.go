package review

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// maxShownText is how much of a text document's contents the page shows;
// past it, the page says how many bytes it leaves out.
const maxShownText = 2 << 20

// View is an approval's whole payload as the page shows it: every field of
// the payload in the form its recipient meets it, and what every card says
// around it (audience, verdict, quorum, expiry, the hash).
type View struct {
	Approval  string
	Operation string
	Action    string
	Tool      string
	// SHA256 is the payload's hash; CardSHA its first 12 hex digits, which
	// the card shows.
	SHA256, CardSHA string
	Target          string
	Audience        string
	AskedBy         string
	Verdict         string
	Quorum          string
	// StepUp says which second factor each approver gives, "" for none.
	StepUp    string
	Expires   string
	ParseMode string
	// Facts are the card's facts, as the card words them.
	Facts []string
	// Messages are the texts, one a message, as they will be sent.
	Label    string
	Messages []Message
	// Rendering is what a text with a parse mode shows its recipient.
	Rendering string
	Files     []FileView
	HTTP      *HTTPView
	// Diff is an edit's change; Quote the message a delete, pin, copy or
	// forward acts on, as it reads now.
	Diff  []Change
	Quote *Quote
	Poll  *PollView
	// Editable is whether an approver may correct the text first.
	Editable bool
}

// Message is one message of a text.
type Message struct {
	N, Of      int
	Characters int
	Text       string
}

// FileView is one file the payload sends.
type FileView struct {
	Kind, Name, Size, SHA256, MIME, Source, Caption string
	// Image is an address the page shows the file at, "" for no image.
	Image string
	// Text is a text file's contents; Left what the page leaves out of it.
	Text string
	Left string
	// Missing says the stored bytes could not be read (the commit would
	// refuse them too).
	Missing string
}

// HTTPView is an HTTP request, every byte of it but the headers' values.
type HTTPView struct {
	Method       string
	URL          string
	Template     string
	Placeholders []tools.Placeholder
	Query        []tools.Placeholder
	Headers      []Header
	Body         string
	Idempotency  bool
	Reconcile    string
}

// Header is a header's name and where its value comes from, never the value.
type Header struct{ Name, From string }

// Quote is the message an action acts on.
type Quote struct {
	Verb      string
	MessageID int64
	Chat      string
	Text      string
}

// PollView is a poll.
type PollView struct {
	Question string
	Options  []string
	Public   bool
	Multiple bool
}

// viewOf builds the view of a: every part of its payload, its files read
// from the store.
func (s *Server) viewOf(ctx context.Context, a command.Approval) View {
	op, p := a.Operation, a.Operation.Payload
	v := View{Approval: a.ID, Operation: op.ID, Action: p.Action, Tool: op.Tool, SHA256: a.PayloadSHA256,
		CardSHA: a.PayloadSHA256[:min(12, len(a.PayloadSHA256))], Target: a.Shown.Audience, AskedBy: a.AskedBy,
		Verdict: a.Verdict, Expires: a.Expires.UTC().Format("2006-01-02 15:04 UTC"), ParseMode: p.ParseMode,
		Label: command.TextLabel(a.Shown, p), Editable: a.Editable}
	switch {
	case s.opts.Audience != nil && v.Target != "":
		v.Audience = s.opts.Audience(ctx, p, v.Target)
	case p.Audience != nil:
		v.Audience = p.Audience.String()
	}
	v.Quorum = "one approver's approval sends it"
	if q := operator.QuorumLine(a.Approval); q != "" {
		v.Quorum = q
	}
	if a.Factor != "" {
		v.StepUp = operator.StepUpLine(a.Factor)
	}
	for _, f := range a.Shown.Facts {
		v.Facts = append(v.Facts, command.Visible(f))
	}
	if v.Label != "" && p.Request == nil {
		msgs := p.Messages()
		for i, m := range msgs {
			v.Messages = append(v.Messages, Message{N: i + 1, Of: len(msgs), Characters: tools.Units(m), Text: command.Visible(m)})
		}
		v.Rendering = command.Rendering(p.Text, p.ParseMode)
	}
	for _, f := range p.Files {
		v.Files = append(v.Files, s.fileView(ctx, a.ID, f))
	}
	if p.Request != nil {
		tool, _ := s.opts.Handler.Operator.Tool(op.Tool)
		v.HTTP = httpView(tool, p)
	}
	switch {
	case p.MessageID != 0 && p.Action == action.EditMessage:
		v.Diff = Diff(p.Before, p.Text)
	case p.MessageID != 0:
		q := &Quote{Verb: quoteVerb(p), MessageID: p.MessageID, Chat: p.Target, Text: command.Visible(p.Before)}
		if p.From != "" {
			q.Chat = p.From
		}
		v.Quote = q
	}
	if p.Poll != nil {
		v.Poll = &PollView{Question: command.Visible(p.Text), Public: p.Poll.Public, Multiple: p.Poll.Multiple}
		for _, o := range p.Poll.Options {
			v.Poll.Options = append(v.Poll.Options, command.Visible(o))
		}
		v.Messages = nil
	}
	return v
}

// quoteVerb says what the action does to the message it quotes.
func quoteVerb(p action.Payload) string {
	switch p.Action {
	case action.DeleteMessage:
		return "Deletes, for everyone,"
	case action.PinMessage:
		if p.Notify {
			return "Pins, notifying the chat's members,"
		}
		return "Pins, silently,"
	case action.UnpinMessage:
		return "Unpins"
	case action.CopyMessage:
		return "Copies to " + p.Target
	case action.ForwardMessage:
		return "Forwards to " + p.Target
	}
	return "Acts (" + p.Action + ") on"
}

// fileView reads a file's stored bytes for the page: an image is shown at an
// address of its own, a text's contents inline.
func (s *Server) fileView(ctx context.Context, apID string, f action.File) FileView {
	fv := FileView{Kind: f.Kind, Name: command.Visible(f.Name), Size: fmt.Sprintf("%s (%d bytes)", action.Size(f.Size), f.Size),
		SHA256: f.SHA256, MIME: f.MIME, Source: command.Visible(f.Source), Caption: command.Visible(f.Caption)}
	if s.opts.Files == nil {
		fv.Missing = "this bot keeps no file store"
		return fv
	}
	b, err := s.opts.Files.Open(ctx, f.SHA256)
	if err != nil {
		fv.Missing = "the stored bytes cannot be read; the send would refuse them too"
		return fv
	}
	switch {
	case f.Kind == action.FilePhoto || strings.HasPrefix(f.MIME, "image/"):
		fv.Image = s.keys.fileURL(s.prefix(), apID, f.SHA256, s.now().Add(fileTTL))
	case isText(f.MIME, b):
		shown := b
		if len(shown) > maxShownText {
			shown = shown[:maxShownText]
			fv.Left = fmt.Sprintf("The last %d bytes of the file are not shown here; they are sent.", len(b)-len(shown))
		}
		fv.Text = command.Visible(strings.ToValidUTF8(string(shown), "\uFFFD"))
	}
	return fv
}

// isText reports whether a file is text to show: a text MIME type, or bytes
// that are UTF-8 with no NUL.
func isText(mime string, b []byte) bool {
	if strings.HasPrefix(mime, "text/") || mime == "application/json" || strings.HasSuffix(mime, "+json") || strings.HasSuffix(mime, "xml") {
		return true
	}
	return utf8.Valid(b) && !bytes.ContainsRune(b, 0)
}

// httpView is a request as the page shows it.
func httpView(tool tools.Tool, p action.Payload) *HTTPView {
	r := p.Request
	h := &HTTPView{Method: r.Method, URL: r.URL, Idempotency: r.IdempotencyKey, Reconcile: r.Reconcile}
	h.Template, h.Placeholders = tools.Placeholders(tool, p)
	if u, err := url.Parse(r.URL); err == nil {
		for k, vs := range u.Query() {
			for _, v := range vs {
				h.Query = append(h.Query, tools.Placeholder{Name: k, Value: v})
			}
		}
	}
	for _, hd := range r.Headers {
		from := "a value the declaration sets, withheld here"
		if hd.Env != "" {
			from = "$" + hd.Env + " from the bot's environment, withheld"
		}
		h.Headers = append(h.Headers, Header{Name: hd.Name, From: from})
	}
	if r.Body != "" {
		h.Headers = append(h.Headers, Header{Name: "Content-Type", From: "application/json"})
		var b bytes.Buffer
		if json.Indent(&b, []byte(r.Body), "", "  ") == nil {
			h.Body = command.Visible(b.String())
		} else {
			h.Body = command.Visible(r.Body)
		}
	}
	if r.IdempotencyKey {
		h.Headers = append(h.Headers, Header{Name: "Idempotency-Key", From: "this operation's id"})
	}
	return h
}

// render is the page's payload part, as HTML.
func render(v View) (string, error) {
	var b strings.Builder
	err := payloadTemplate.Execute(&b, v)
	return b.String(), err
}

//go:embed payload.html
var payloadHTML string

var payloadTemplate = template.Must(template.New("payload").Parse(payloadHTML))
