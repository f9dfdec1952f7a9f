package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The mix of calls that are not text sends (-actions): photos (a path under
// files.roots, or a file attached to the command), edits, deletes, pins and
// unpins of messages the run saw committed, through chat commands; albums and
// three declared HTTP tools against a fake service, through the MCP callers.

// apiTokenEnv names the environment variable that holds the HTTP tools' header
// secret: set for every bot process, written nowhere, looked for everywhere.
const apiTokenEnv = "CHAOS_API_TOKEN"

// The declared HTTP tools of the run, one per idempotency class.
const (
	httpKeyed      = "commit_chaos_keyed"      // idempotency: header, on a service that honours the key
	httpReconciled = "commit_chaos_reconciled" // idempotency: none, with a reconcile read
	httpPlain      = "commit_chaos_plain"      // idempotency: none, no reconcile: additive
)

// The paths of the HTTP tools on the fake service, each followed by the call's ref.
var httpPaths = map[string]string{httpKeyed: "/keyed/", httpReconciled: "/notes/", httpPlain: "/plain/"}

// stateSetting are the tools whose unknown outcomes the system settles.
var stateSetting = map[string]bool{"commit_edit_message": true, "commit_delete_message": true, "commit_pin_message": true,
	"commit_unpin_message": true, httpKeyed: true, httpReconciled: true}

// mix is the run's share of calls that are not text sends, and what it needs:
// the fake HTTP service, the header secret, the photos.
type mix struct {
	api    *fakeapi.Server
	token  string
	root   string   // files.roots: the photos
	photos []string // their paths
	pngs   [][]byte

	mu       sync.Mutex
	original map[[2]int64]string // (chat, message id) → the text it was sent with, before any edit
}

// newMix writes a few small distinct PNGs under root/files and starts the fake
// HTTP service.
func newMix(root string) (*mix, error) {
	m := &mix{root: filepath.Join(root, "files"), original: map[[2]int64]string{}, token: randomToken()}
	if err := os.MkdirAll(m.root, 0o700); err != nil {
		return nil, err
	}
	for i := range 4 {
		img := image.NewRGBA(image.Rect(0, 0, 8+4*i, 8))
		for x := range img.Bounds().Dx() {
			img.Set(x, x%8, color.RGBA{R: uint8(60 * i), G: 200, B: uint8(x * 20), A: 255})
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			return nil, err
		}
		p := filepath.Join(m.root, fmt.Sprintf("chart-%d.png", i+1))
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			return nil, err
		}
		m.photos, m.pngs = append(m.photos, p), append(m.pngs, b.Bytes())
	}
	m.api = fakeapi.Start()
	return m, nil
}

func (m *mix) close() { m.api.Close() }

func randomToken() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 32)
	rand.Read(b)
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	return string(b)
}

// policy is what the run adds to the tools of its policy: the file tools, the
// state-setting tools, and the three HTTP tools on the fake service.
func (m *mix) policy() string {
	var b strings.Builder
	for _, t := range []string{"commit_send_photo", "commit_send_album", "commit_edit_message", "commit_delete_message", "commit_pin_message", "commit_unpin_message"} {
		fmt.Fprintf(&b, "  %s:\n    side_effect: committed\n    approval: required\n", t)
	}
	decl := func(name, path, idem, reconcile string) {
		fmt.Fprintf(&b, `  %s:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "%s%s{ref}"
      hosts: ["127.0.0.1"]
      headers:
        Authorization: {env: %s, prefix: "Bearer "}
      body_schema: {type: object, required: [note], properties: {note: {type: string}}}
      evidence: /id
      idempotency: %s
      timeout: 3s
`, name, m.api.URL, path, apiTokenEnv, idem)
		if reconcile != "" {
			fmt.Fprintf(&b, "      reconcile:\n        url: \"%s%s{ref}\"\n", m.api.URL, reconcile)
		}
	}
	decl(httpKeyed, httpPaths[httpKeyed], "header", "")
	decl(httpReconciled, httpPaths[httpReconciled], "none", httpPaths[httpReconciled])
	decl(httpPlain, httpPaths[httpPlain], "none", "")
	return b.String()
}

// action issues one call that is not a text send: the n-th call of the run.
func (w *world) action(n int) {
	kinds := []string{"photo", "photo", "edit", "edit", "delete", "pin", "pin", "unpin"}
	if w.agents != nil {
		kinds = append(kinds, "album", httpKeyed, httpKeyed, httpReconciled, httpReconciled, httpPlain)
	}
	kind := kinds[w.rnd.IntN(len(kinds))]
	switch kind {
	case "photo":
		w.photo(n)
	case "edit", "delete", "pin", "unpin":
		w.onSent(kind, n)
	case "album":
		w.album(n)
	default:
		w.httpCall(kind, n)
	}
}

// photo sends one of the run's photos with a unique caption: by its path, or
// attached to the command.
func (w *world) photo(n int) {
	chat, i := w.target(), w.rnd.IntN(len(w.mix.photos))
	caption := fmt.Sprintf("chaos %d photo %d", w.cfg.Seed, n)
	w.botFault("sendPhoto", chat, false)
	if w.rnd.IntN(2) == 0 {
		w.note("action: /photo with a path")
		w.actionCommand(fmt.Sprintf("/photo %d %s %s", chat, w.mix.photos[i], caption))
		return
	}
	w.note("action: /photo with the file attached")
	w.srv.PushFile(operator, "photo", filepath.Base(w.mix.photos[i]), w.mix.pngs[i], fmt.Sprintf("/photo %d %s", chat, caption))
}

// onSent edits, deletes, pins or unpins a message the run saw committed, with
// no other change of it open.
func (w *world) onSent(kind string, n int) {
	op, ok := w.sentTarget(kind)
	if !ok {
		w.note("action: no committed message free for /" + kind + ", a photo instead")
		w.photo(n)
		return
	}
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	w.mix.mu.Lock()
	for _, id := range evidence(op).MessageIDs {
		w.mix.original[[2]int64{chat, id}] = op.Payload.Text
	}
	w.mix.mu.Unlock()
	method := map[string]string{"edit": "editMessageText", "delete": "deleteMessage", "pin": "pinChatMessage", "unpin": "unpinChatMessage"}[kind]
	w.botFault(method, chat, true)
	w.note("action: /" + kind)
	line := "/" + kind + " " + op.ID
	if kind == "edit" {
		line += fmt.Sprintf(" chaos %d edit %d", w.cfg.Seed, n)
	}
	w.actionCommand(line)
}

// sentTarget picks a committed text send of one message whose message no
// state-setting operation is changing now (none open), and that no delete
// took; false when there is none.
func (w *world) sentTarget(kind string) (journal.Operation, bool) {
	j, done, err := w.openJournal()
	if err != nil {
		return journal.Operation{}, false
	}
	defer done()
	all, err := j.Operations(context.Background(), journal.Filter{})
	if err != nil {
		return journal.Operation{}, false
	}
	busy := map[[2]string]bool{}
	for _, op := range all {
		if op.Payload.MessageID == 0 {
			continue
		}
		k := [2]string{op.Payload.Target, fmt.Sprint(op.Payload.MessageID)}
		if !op.State.Final() || op.Payload.Action == action.DeleteMessage && op.State == journal.Committed {
			busy[k] = true
		}
	}
	var free []journal.Operation
	for _, op := range all {
		ev := evidence(op)
		if op.Tool != "commit_send_message" || op.State != journal.Committed || len(ev.MessageIDs) != 1 {
			continue
		}
		if !busy[[2]string{op.Payload.Target, fmt.Sprint(ev.MessageIDs[0])}] {
			free = append(free, op)
		}
	}
	if len(free) == 0 {
		return journal.Operation{}, false
	}
	return free[w.rnd.IntN(len(free))], true
}

// album has an MCP caller send two or three of the photos as one album, each
// item with a caption of its own.
func (w *world) album(n int) {
	chat, key := w.target(), fmt.Sprintf("chaos %d mcp album %d", w.cfg.Seed, n)
	var items []map[string]any
	for i := range 2 + w.rnd.IntN(2) {
		items = append(items, map[string]any{"file": w.mix.photos[w.rnd.IntN(len(w.mix.photos))], "caption": fmt.Sprintf("%s #%d", key, i+1)})
	}
	w.botFault("sendMediaGroup", chat, false)
	w.note("action: album by an MCP caller")
	w.agents.commit(w.rnd.IntN(len(w.agents.callers)), "commit_send_album", map[string]any{"chat_id": fmt.Sprint(chat), "files": items}, key)
}

// httpCall has an MCP caller make one call of a declared HTTP tool, the fake
// service scripted to misbehave on its path at times.
func (w *world) httpCall(tool string, n int) {
	ref := fmt.Sprintf("c%d-%d", w.cfg.Seed, n)
	key := fmt.Sprintf("chaos %d mcp http %d", w.cfg.Seed, n)
	path := httpPaths[tool] + ref
	r := w.rnd.Float64()
	script := func(name string, steps ...fakeapi.Step) {
		w.note("api fault: " + name)
		w.mix.api.Script(path, steps...)
	}
	lost, lostReq := fakeapi.Step{Mode: fakeapi.LoseAnswer}, fakeapi.Step{Mode: fakeapi.LoseRequest}
	switch {
	case r < 0.30:
		script("answer lost after the effect", lost)
	case r < 0.38 && tool == httpKeyed:
		script("answer lost, and lost again on the repeat", lost, lost)
	case r < 0.38 && tool == httpReconciled:
		script("answer lost, and the reconcile read failed", lost, fakeapi.Step{Mode: fakeapi.Status, Status: 500, Body: `{"error":"down"}`})
	case r < 0.46:
		script("request lost before the effect", lostReq)
	case r < 0.56:
		script("429 with Retry-After", fakeapi.Step{Mode: fakeapi.TooMany, RetryAfter: "1"})
	case r < 0.64:
		script("503", fakeapi.Step{Mode: fakeapi.Unavailable})
	case r < 0.68:
		script("answer never came (past the 3 s timeout)", fakeapi.Step{Mode: fakeapi.Hang})
	}
	w.note("action: " + tool + " by an MCP caller")
	w.agents.commit(w.rnd.IntN(len(w.agents.callers)), tool, map[string]any{"ref": ref, "body": map[string]any{"note": key}}, key)
}

// botFault has the fake Telegram fail the next call of method in chat, at
// times: most often taking the change and losing the answer, which makes the
// outcome unknown; for a state-setting call, now and then the repeat (or the
// read) that would settle it fails too.
func (w *world) botFault(method string, chat int64, settles bool) {
	if w.rnd.Float64() >= 0.45 {
		return
	}
	r := w.rnd.Float64()
	inject := func(name string, f telegramtest.Fault) {
		w.note("fault: " + method + " " + name)
		w.srv.Inject(f.For(method).InChat(chat))
	}
	switch {
	case r < 0.55:
		inject("dropped after accepted", telegramtest.AcceptThenDrop())
	case r < 0.70 && settles && method == "pinChatMessage":
		inject("dropped after accepted", telegramtest.AcceptThenDrop())
		w.note("fault: getChat dropped before accepted (the read that would settle the pin)")
		w.srv.Inject(telegramtest.DropBeforeAccept().For("getChat").InChat(chat))
	case r < 0.70 && settles:
		inject("dropped after accepted, twice", telegramtest.AcceptThenDrop().Times(2))
	case r < 0.85:
		inject("dropped before accepted", telegramtest.DropBeforeAccept())
	default:
		inject("429 retry_after 1", telegramtest.TooManyRequests(1))
	}
}

// actionCommand pushes a command line from the operator as a new message, and
// remembers it, so that a second delivery of the same message can be pushed.
func (w *world) actionCommand(line string) command {
	w.mu.Lock()
	w.nextMsg++
	c := command{msgID: w.nextMsg, text: line, line: line}
	w.commands = append(w.commands, c)
	w.mu.Unlock()
	w.push(c)
	return c
}

// mcpKeyPattern finds the run's words for an MCP call in a payload: a text, a
// caption, an HTTP body.
var mcpKeyPattern = regexp.MustCompile(`chaos -?\d+ mcp( [a-z]+)? \d+( cut)?`)

// mcpKey is the run's key of the MCP call that made op ("" when none did).
func mcpKey(op journal.Operation) string {
	if k := mcpKeyPattern.FindString(op.Payload.Text); k != "" {
		return k
	}
	for _, f := range op.Payload.Files {
		if k := mcpKeyPattern.FindString(f.Caption); k != "" {
			return k
		}
	}
	return ""
}

// deliveredTexts are the texts by which the messages op adds are known in
// Telegram: a text, a photo's caption, each album item's caption; none for a
// call that adds no message.
func deliveredTexts(op journal.Operation) []string {
	switch op.Payload.Action {
	case action.SendMessage, action.PublishPost, action.SendPhoto, "":
		if op.Payload.Text == "" {
			return nil
		}
		return []string{op.Payload.Text}
	case action.SendAlbum:
		var out []string
		for _, f := range op.Payload.Files {
			out = append(out, f.Caption)
		}
		return out
	}
	return nil
}

// apiPath is the path on the fake service that an HTTP operation's request
// names, "" for another operation.
func apiPath(op journal.Operation) string {
	if op.Payload.Request == nil {
		return ""
	}
	u, err := url.Parse(op.Payload.Request.URL)
	if err != nil {
		return ""
	}
	return u.EscapedPath()
}

// landed says whether op's change is in the world, as a person looking would
// find it: its messages in the chat, the change of the message it names taken
// by Telegram while it was out, its effect at the fake service.
func (w *world) landed(j *journal.Journal, op journal.Operation) bool {
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	id := fmt.Sprint(op.Payload.MessageID)
	sameMessage := func(c telegramtest.Call) bool { return c.Params["message_id"] == id }
	switch op.Payload.Action {
	case action.EditMessage:
		return w.tookWhileOut(j, op, "editMessageText", func(c telegramtest.Call) bool { return sameMessage(c) && c.Params["text"] == op.Payload.Text })
	case action.DeleteMessage:
		return w.tookWhileOut(j, op, "deleteMessage", sameMessage)
	case action.PinMessage:
		return w.tookWhileOut(j, op, "pinChatMessage", sameMessage)
	case action.UnpinMessage:
		return w.tookWhileOut(j, op, "unpinChatMessage", sameMessage)
	case action.HTTP:
		for _, e := range w.mix.api.Effects() {
			if e.Path == apiPath(op) && (!op.Payload.Request.IdempotencyKey || e.Key == op.ID) {
				return true
			}
		}
		return false
	}
	for _, text := range deliveredTexts(op) {
		if len(w.messagesWith(chat, text)) > 0 {
			return true
		}
	}
	return false
}

// tookWhileOut says whether Telegram took a call of method in op's chat that
// match accepts, from op's first attempt on.
func (w *world) tookWhileOut(j *journal.Journal, op journal.Operation, method string, match func(telegramtest.Call) bool) bool {
	ts, err := j.Transitions(context.Background(), op.ID)
	if err != nil {
		return false
	}
	from := time.Now()
	for _, t := range ts {
		if t.To == journal.Committing && t.At.Before(from) {
			from = t.At
		}
	}
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	for _, c := range w.srv.CallsTo(method) {
		if c.ChatID == chat && taken(c) && match(c) && !c.Time.Before(from.Add(-time.Second)) {
			return true
		}
	}
	return false
}

// taken reports whether Telegram applied call c, whatever became of its answer.
func taken(c telegramtest.Call) bool {
	return c.Fault == telegramtest.ActionAcceptThenReply || c.Fault == telegramtest.ActionAcceptThenDrop ||
		c.Fault == telegramtest.ActionAcceptThenHang || (c.Fault == telegramtest.ActionNone && c.Status == 200)
}

// messagesWith are the messages in chat sent with text (or caption), deleted
// since or not.
func (w *world) messagesWith(chat int64, text string) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range w.srv.Messages(chat) {
		if w.sentText(m) == text {
			out = append(out, m)
		}
	}
	return out
}

// sentText is the text (or caption) message m was sent with, before any edit.
func (w *world) sentText(m telegramtest.Message) string {
	if w.mix != nil {
		w.mix.mu.Lock()
		defer w.mix.mu.Unlock()
		if t, ok := w.mix.original[[2]int64{m.Chat.ID, int64(m.MessageID)}]; ok {
			return t
		}
	}
	if m.RawText != "" {
		return m.RawText
	}
	if m.Caption != "" {
		return m.Caption
	}
	return m.Text
}

// arrivedOther is arrived for a call that is not a text send: whether its
// change is in the world. A photo, an album or an HTTP call without a key may
// have a second operation (an MCP call asked again after a kill cut it): what
// the committed ones of the same call account for is not this one's.
func (w *world) arrivedOther(j *journal.Journal, op journal.Operation) (bool, bool) {
	if w.mix == nil {
		return false, false
	}
	if !w.landed(j, op) {
		return false, true
	}
	texts, path := deliveredTexts(op), apiPath(op)
	if len(texts) == 0 && (path == "" || op.Payload.Request.IdempotencyKey) {
		return true, true // a change of state, or an effect under this operation's own key
	}
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	n := 0
	if len(texts) > 0 {
		n = len(w.messagesWith(chat, texts[0]))
	} else {
		for _, e := range w.mix.api.Effects() {
			if e.Path == path {
				n++
			}
		}
	}
	all, err := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Committed}})
	if err != nil {
		return false, false
	}
	for _, o := range all {
		if o.ID == op.ID || o.Tool != op.Tool {
			continue
		}
		if len(texts) > 0 && slices.Contains(deliveredTexts(o), texts[0]) || len(texts) == 0 && apiPath(o) == path {
			n--
		}
	}
	return n > 0, true
}

// evidence is what the service confirmed of op: the parts recorded as they went,
// or the result's.
func evidence(op journal.Operation) action.Evidence {
	switch {
	case op.Evidence != nil && len(op.Evidence.MessageIDs) > 0:
		return *op.Evidence
	case op.Result != nil && op.Result.Evidence != nil:
		return *op.Result.Evidence
	}
	return action.Evidence{}
}
