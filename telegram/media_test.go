package telegram_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// withFiles offers the photo and document tools, fetching from any address
// (the test servers are on loopback).
func withFiles() rigOption {
	return withPolicy(func(p *policy.Policy) {
		for _, name := range []string{"commit_send_photo", "commit_send_document"} {
			p.Tools[name] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		}
		p.Files.FetchPrivate = true
	})
}

// A person attaches a photo with /photo as its caption: the approver is shown
// the photo itself with a card naming its hash, and what reaches the chat is
// exactly the bytes approved, uploaded (not re-sent by file_id), with the
// caption as typed.
func TestAnAttachedPhotoIsApprovedAndSentAsItsBytes(t *testing.T) {
	t.Parallel()
	r := newRig(t, withFiles())
	img := telegramtest.PNG(t, 40, 30, 1)
	r.srv.PushFile(alice, "photo", "chart.png", img, "/photo 222 Weekly numbers")
	card := r.replyContaining(alice, "Approval needed: send_photo")
	for _, want := range []string{"To: 222 (\"", "Sends the photo", "sha256 " + telegramtest.SHA256(img)[:12], "Caption, exactly as it will be sent", "Weekly numbers"} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
	previews := r.srv.CallsTo("sendPhoto")
	if len(previews) != 1 || previews[0].ChatID != alice || previews[0].Uploads["photo"].SHA256 != telegramtest.SHA256(img) {
		t.Fatalf("sendPhoto calls before the tap = %+v, want the photo itself shown to alice", previews)
	}
	if card.ReplyTo == 0 {
		t.Error("the card does not answer the photo it asks about")
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the photo in the chat", atLeast(1, delivered(target)))
	sent := r.srv.Messages(target)[0]
	if len(sent.Photo) == 0 || sent.Caption != "Weekly numbers" {
		t.Fatalf("delivered %+v, want the photo with its caption", sent)
	}
	var toChat []telegramtest.Call
	for _, c := range r.srv.CallsTo("sendPhoto") {
		if c.ChatID == target {
			toChat = append(toChat, c)
		}
	}
	if len(toChat) != 1 || toChat[0].Uploads["photo"].SHA256 != telegramtest.SHA256(img) {
		t.Fatalf("sendPhoto to the chat = %+v, want one upload of the approved bytes", toChat)
	}
	op := r.operation(opIn(t, card.Text[strings.Index(card.Text, "Operation: "):]))
	if len(op.Payload.Files) != 1 || op.Payload.Files[0].SHA256 != telegramtest.SHA256(img) {
		t.Errorf("payload files = %+v, want the photo named by its content", op.Payload.Files)
	}
}

// The payload names bytes, not an address: a photo whose address serves
// another image by the time it is approved still sends the one approved, and
// a document changed on the bot's disk after approval is never sent.
func TestAnApprovalBindsToTheFilesBytes(t *testing.T) {
	t.Parallel()
	a, b := telegramtest.PNG(t, 20, 20, 1), telegramtest.PNG(t, 20, 20, 2)
	var mu sync.Mutex
	serving := a
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(serving)
	}))
	defer web.Close()
	r := newRig(t, withFiles())

	r.command(alice, "/photo 222 "+web.URL+"/chart.png")
	card := r.replyContaining(alice, "Approval needed: send_photo")
	if !strings.Contains(card.Text, "sha256 "+telegramtest.SHA256(a)[:12]) || !strings.Contains(card.Text, "No caption.") {
		t.Fatalf("card does not name photo A:\n%s", card.Text)
	}
	mu.Lock()
	serving = b // the address now serves photo B
	mu.Unlock()
	r.tap(alice, card, "Approve")
	r.waitFor("the photo in the chat", atLeast(1, delivered(target)))
	for _, c := range r.srv.CallsTo("sendPhoto") {
		if c.ChatID == target && c.Uploads["photo"].SHA256 != telegramtest.SHA256(a) {
			t.Fatalf("sent %s, want photo A %s as approved", c.Uploads["photo"].SHA256, telegramtest.SHA256(a))
		}
	}

	r.command(alice, "/document 222 "+web.URL+"/report.bin the report")
	card = r.replyContaining(alice, "Approval needed: send_document")
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	stored := filepath.Join(r.dir, "files", telegramtest.SHA256(b)[:2], telegramtest.SHA256(b))
	if err := os.WriteFile(stored, []byte("something else"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the document refused", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Failed })
	if calls := r.srv.CallsTo("sendDocument"); len(calls) != 0 {
		t.Errorf("sendDocument calls = %d, want none: the stored file no longer matches its approval", len(calls))
	}
	if op := r.operation(opID); op.Result == nil || !strings.Contains(op.Result.Reason, "not in the file store as approved") {
		t.Errorf("result = %+v, want the refusal naming the changed file", op.Result)
	}
}

// A photo is additive: when Telegram took it and the answer was lost, the
// outcome is unknown, an envelope asks a person, and it is never uploaded
// again.
func TestAPhotoWhoseAnswerWasLostIsNeverSentAgain(t *testing.T) {
	t.Parallel()
	r := newRig(t, withFiles())
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendPhoto").InChat(target))
	r.srv.PushFile(alice, "photo", "a.png", telegramtest.PNG(t, 10, 10, 3), "/photo 222")
	card := r.replyContaining(alice, "Approval needed: send_photo")
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.waitFor("the outcome unknown", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Unknown })
	r.waitFor("the envelope for a person", func(*telegramtest.Server) bool { // written just after the move
		_, _, err := r.vault.Get(opID)
		return err == nil
	})
	if n := len(callsIn(r.srv, "sendPhoto", target)); n != 1 {
		t.Errorf("sendPhoto to the chat %d times, want once", n)
	}
}

// Telegram's limits are the verifier's checks, before any card: a caption
// longer than 1024 characters is sent back for repair.
func TestACaptionOverTelegramsLimitIsRefusedBeforeAnyCard(t *testing.T) {
	t.Parallel()
	r := newRig(t, withFiles())
	r.srv.PushFile(alice, "photo", "a.png", telegramtest.PNG(t, 10, 10, 4), "/photo 222 "+strings.Repeat("x", 1025))
	reply := r.replyContaining(alice, "caption is 1025 characters")
	if strings.Contains(reply.Text, "Approval needed") || len(r.srv.CallsTo("sendPhoto")) != 0 {
		t.Errorf("a card or a photo went out for a caption over the limit: %s", reply.Text)
	}
}

// withAlbums offers commit_send_album besides the file tools.
func withAlbums() rigOption {
	return withPolicy(func(p *policy.Policy) {
		p.Tools["commit_send_album"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		p.Files.FetchPrivate = true
	})
}

// remoteAlbum asks, from another process (an MCP server on the same data
// folder), for an album of the photos web serves at the given paths.
func (r *rig) remoteAlbum(web string, paths ...string) action.Result {
	r.t.Helper()
	op := r.remote()
	task, err := op.StartTask(r.t.Context(), journal.Task{Surface: "mcp", Summary: "mcp session"})
	if err != nil {
		r.t.Fatal(err)
	}
	var items []map[string]string
	for i, p := range paths {
		items = append(items, map[string]string{"file": web + p, "caption": "item " + string(rune('1'+i))})
	}
	args, _ := json.Marshal(map[string]any{"chat_id": "222", "files": items})
	res, err := op.Call(r.t.Context(), task.ID, operator.Call{Tool: "commit_send_album", Args: args})
	if err != nil || res.Status != action.StatusPending {
		r.t.Fatalf("album call = %+v, %v; want pending", res, err)
	}
	return res
}

// photoServer serves a different photo at each path.
func photoServer(t *testing.T) (*httptest.Server, map[string][]byte) {
	photos := map[string][]byte{"/a.png": telegramtest.PNG(t, 10, 10, 10), "/b.png": telegramtest.PNG(t, 10, 10, 20), "/c.png": telegramtest.PNG(t, 10, 10, 30)}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { _, _ = w.Write(photos[req.URL.Path]) }))
	t.Cleanup(web.Close)
	return web, photos
}

// An album prepared by another process on the same data folder is shown to
// the approver photo by photo, and sent as one group of exactly the stored
// bytes, in order, with each item's caption.
func TestAnAlbumIsShownAndSentItemByItem(t *testing.T) {
	t.Parallel()
	r := newRig(t, withAlbums())
	web, photos := photoServer(t)
	res := r.remoteAlbum(web.URL, "/a.png", "/b.png", "/c.png")
	card := r.cardFor(alice, res.OperationID)
	for i, p := range []string{"/a.png", "/b.png", "/c.png"} {
		if want := fmt.Sprintf("%d. photo %q, %s, sha256 %s", i+1, p[1:], action.Size(int64(len(photos[p]))), telegramtest.SHA256(photos[p])[:12]); !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
	if shown := len(callsIn(r.srv, "sendPhoto", alice)); shown != 3 {
		t.Errorf("photos shown to the approver = %d, want each of the 3", shown)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the album committed", func(*telegramtest.Server) bool { return r.operation(res.OperationID).State == journal.Committed })
	groups := r.srv.CallsTo("sendMediaGroup")
	if len(groups) != 1 {
		t.Fatalf("sendMediaGroup calls = %d, want 1", len(groups))
	}
	for i, p := range []string{"/a.png", "/b.png", "/c.png"} {
		if got := groups[0].Uploads[fmt.Sprintf("file%d", i)]; got.SHA256 != telegramtest.SHA256(photos[p]) {
			t.Errorf("item %d uploaded %s, want %s", i+1, got.SHA256, telegramtest.SHA256(photos[p]))
		}
	}
	if op := r.operation(res.OperationID); op.Result == nil || op.Result.Evidence == nil || len(op.Result.Evidence.MessageIDs) != 3 {
		t.Errorf("result = %+v, want the 3 messages as evidence", op.Result)
	}
	for i, m := range r.srv.Messages(target) {
		if want := "item " + string(rune('1'+i)); m.Caption != want {
			t.Errorf("message %d caption %q, want %q", i, m.Caption, want)
		}
	}
}

// An album whose answer was lost may be in the chat or not: it is never sent
// again, and its envelope names every item for a person to look for.
func TestAnAlbumWhoseAnswerWasLostNamesEachItem(t *testing.T) {
	t.Parallel()
	r := newRig(t, withAlbums())
	web, photos := photoServer(t)
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMediaGroup").InChat(target))
	res := r.remoteAlbum(web.URL, "/a.png", "/b.png")
	r.tap(alice, r.cardFor(alice, res.OperationID), "Approve")
	r.waitFor("the outcome unknown", func(*telegramtest.Server) bool { return r.operation(res.OperationID).State == journal.Unknown })
	var e envelope.Envelope
	r.waitFor("the envelope", func(*telegramtest.Server) bool {
		var err error
		e, _, err = r.vault.Get(res.OperationID)
		return err == nil
	})
	if len(e.Items) != 2 || !strings.Contains(e.Items[1], telegramtest.SHA256(photos["/b.png"])[:12]) {
		t.Errorf("envelope items = %q, want both photos by hash", e.Items)
	}
	if n := len(r.srv.CallsTo("sendMediaGroup")); n != 1 {
		t.Errorf("sendMediaGroup calls = %d, want 1: an album is never sent again", n)
	}
}

// A photo's caption is edited as a caption (editMessageCaption), and the card
// says so; a poll's question cannot be edited, and the refusal comes before
// any card.
func TestEditingAFileMessageChangesItsCaption(t *testing.T) {
	t.Parallel()
	r := newRig(t, withFiles(), withEdits(""), withTools("commit_send_poll"))
	r.srv.PushFile(alice, "photo", "a.png", telegramtest.PNG(t, 10, 10, 5), "/photo 222 old caption")
	r.tap(alice, r.replyContaining(alice, "Approval needed: send_photo"), "Approve")
	sent := opIn(t, r.replyContaining(alice, "Sent op-").Text)

	r.command(alice, "/edit "+sent+" new caption")
	card := r.replyContaining(alice, "Approval needed: edit_message")
	if !strings.Contains(card.Text, "Changes the caption of message") || !strings.Contains(card.Text, "The caption will read, exactly as it will be sent") {
		t.Errorf("card:\n%s", card.Text)
	}
	editOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.committed(editOp)
	if m := r.srv.Messages(target)[0]; m.Caption != "new caption" {
		t.Errorf("caption %q, want the edit", m.Caption)
	}
	if n := len(r.srv.CallsTo("editMessageCaption")); n != 1 || editsIn(r.srv, target) != 0 {
		t.Errorf("editMessageCaption calls = %d, editMessageText in the chat %d; want the caption edited", n, editsIn(r.srv, target))
	}

	res := r.remoteCall("commit_send_poll", map[string]any{"chat_id": "222", "question": "Which?", "options": []string{"a", "b"}})
	r.tap(alice, r.cardFor(alice, res.OperationID), "Approve")
	r.committed(res.OperationID)
	r.command(alice, "/edit "+res.OperationID+" Which one?")
	r.replyContaining(alice, "is a poll: its text cannot be edited")
}

// Telegram counts each item of an album against its limits: after an album of
// three, a text to the same chat waits as if the items had gone one by one,
// and Telegram's flood limits (enforced by the fake) never answer 429.
func TestAnAlbumCountsAsItsItemsAgainstTheLimits(t *testing.T) {
	t.Parallel()
	r := newRig(t, withAlbums(), withLimits(&telegram.DefaultLimits), withServer(func(o *telegramtest.Options) {
		o.Flood = &telegramtest.FloodLimits{PerSecond: 30, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}
	}), withPolicy(func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_album", Chats: []string{"222"}}, {Tool: "commit_send_message", Chats: []string{"222"}}}
	}))
	web, _ := photoServer(t)
	op := r.remote()
	task, err := op.StartTask(t.Context(), journal.Task{Surface: "mcp", Summary: "mcp session"})
	if err != nil {
		t.Fatal(err)
	}
	album, _ := json.Marshal(map[string]any{"chat_id": "222", "files": []string{web.URL + "/a.png", web.URL + "/b.png", web.URL + "/c.png"}})
	res, err := op.Call(t.Context(), task.ID, operator.Call{Tool: "commit_send_album", Args: album})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != action.StatusPending && res.Status != action.StatusSucceeded {
		t.Fatalf("album = %+v", res)
	}
	r.committed(res.OperationID) // sent by the bot, the owner
	text, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: "right after the album"})
	res, err = op.Call(t.Context(), task.ID, operator.Call{Tool: "commit_send_message", Args: text})
	if err != nil {
		t.Fatal(err)
	}
	r.committed(res.OperationID)
	if n := r.srv.FloodRejections(); n != 0 {
		t.Errorf("429s from Telegram's flood limits = %d, want none", n)
	}
}
