package passkey_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/chromium"
	"github.com/countersign/countersign/passkey"
)

// relyingParty serves the ceremonies over HTTP on localhost, as the review
// page does, keeping alice's credential and its counter between them as the
// journal would.
type relyingParty struct {
	t  *testing.T
	rp *passkey.RP

	mu       sync.Mutex
	enrol    passkey.Enrolment
	cred     passkey.Credential
	receipts []audit.PasskeyReceipt
	last     []byte // the last assertion posted
	refused  []error
}

func (s *relyingParty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var posted struct {
		Credential json.RawMessage `json:"credential"`
	}
	raw, _ := io.ReadAll(r.Body)
	json.Unmarshal(raw, &posted)
	body := []byte(posted.Credential)
	answer := func(v any, err error) {
		if err != nil {
			s.refused = append(s.refused, err)
			v = map[string]any{"ok": false, "error": err.Error()}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	q := r.URL.Query()
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>passkey</title><script>"+passkey.Script+"</script><p>ready</p>")
	case "/enrol/begin":
		options, e, err := s.rp.BeginEnrol(alice, "alice", nil)
		s.enrol = e
		answer(json.RawMessage(options), err)
	case "/enrol/finish":
		c, err := s.rp.FinishEnrol(s.enrol, "alice", body)
		if err == nil {
			s.cred = c
		}
		answer(map[string]any{"ok": true}, err)
	case "/approve/begin":
		options, err := s.rp.BeginApproval(alice, q.Get("approval"), q.Get("hash"), []passkey.Credential{s.cred})
		answer(json.RawMessage(options), err)
	case "/approve/finish":
		s.last = body
		got, err := s.finish(q.Get("approval"), q.Get("hash"), body)
		answer(map[string]any{"ok": true, "counter": got.Counter}, err)
	default:
		http.NotFound(w, r)
	}
}

func (s *relyingParty) finish(approval, hash string, body []byte) (passkey.Approved, error) {
	as, err := passkey.ParseAssertion(body)
	if err != nil {
		return passkey.Approved{}, err
	}
	got, err := s.rp.FinishApproval(alice, approval, hash, []passkey.Credential{s.cred}, as)
	if err == nil {
		s.cred.Counter = got.Counter
		s.receipts = append(s.receipts, got.Receipt)
	}
	return got, err
}

// result is what countersignPasskey's calls resolve to.
type result struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error"`
	Counter uint32 `json:"counter"`
}

func TestAPasskeyOfChromiumsVirtualAuthenticator(t *testing.T) {
	browser := chromium.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// localhost, not 127.0.0.1: a secure origin to the browser, and a host
	// name, as an RP ID must be.
	base := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	rp, err := passkey.NewRP(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	s := &relyingParty{t: t, rp: rp}
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	page, err := browser.Open(ctx, base+"/")
	if err != nil {
		t.Fatal(err)
	}
	device, err := page.AddAuthenticator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	call := func(js string) result {
		t.Helper()
		var r result
		if err := page.Eval(ctx, js, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	approve := func(approval, hash, finishApproval, finishHash string) result {
		return call(`countersignPasskey.approve("/approve/begin?approval=` + approval + `&hash=` + hash + `", "/approve/finish?approval=` + finishApproval + `&hash=` + finishHash + `")`)
	}

	if r := call(`countersignPasskey.enrol("/enrol/begin", "/enrol/finish")`); !r.OK {
		t.Fatalf("enrol: %s", r.Error)
	}
	if s.cred.User != alice || s.cred.Algorithm != -7 {
		t.Fatalf("enrolled %+v; want alice's ES256 credential", s.cred)
	}

	// Payload A approved: a receipt that verifies offline with the key alone,
	// in an export too.
	if r := approve("ap-1", payloadA, "ap-1", payloadA); !r.OK || r.Counter == 0 {
		t.Fatalf("approve payload A: %+v; want ok with a counter", r)
	}
	approvedA := s.last
	key := keyOf(t, s.cred, rp.ID)
	if err := audit.VerifyReceipt(s.receipts[0], key); err != nil {
		t.Fatalf("Chromium's receipt does not verify offline: %v", err)
	}
	exportKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	if rep := checkExport(t, exportKey, key, s.receipts[0]); rep.Fault != nil || rep.Receipts != 1 {
		t.Fatalf("the export of the receipt: %v, %d receipts; want 1 verified", rep.Fault, rep.Receipts)
	}

	// An assertion made for payload A, finished for payload B.
	if r := approve("ap-2", payloadA, "ap-2", payloadB); r.OK || !errors.Is(s.refused[len(s.refused)-1], passkey.ErrRefused) {
		t.Errorf("an assertion for payload A finished for B: %+v; want refused", r)
	}
	// Payload A's assertion posted again, as it was.
	if _, err := s.finish("ap-1", payloadA, approvedA); !errors.Is(err, passkey.ErrCounter) {
		t.Errorf("a replayed assertion: %v; want ErrCounter", err)
	}
	// A clone of the authenticator from before: its counter gone back.
	creds, err := device.Credentials(ctx)
	if err != nil || len(creds) != 1 || creds[0].SignCount < 2 {
		t.Fatalf("the authenticator's credentials: %+v, %v; want one, used twice", creds, err)
	}
	clone := creds[0]
	clone.SignCount = 0
	if err := device.SetCredential(ctx, clone); err != nil {
		t.Fatal(err)
	}
	if r := approve("ap-3", payloadB, "ap-3", payloadB); r.OK || !strings.Contains(r.Error, "counter 1 after") {
		t.Errorf("a counter gone back: %+v; want refused, the counter named", r)
	}
	// A device whose user is not verified makes no assertion the server takes.
	if err := device.SetUserVerified(ctx, false); err != nil {
		t.Fatal(err)
	}
	clone.SignCount = 100
	device.SetCredential(ctx, clone)
	if r := approve("ap-4", payloadB, "ap-4", payloadB); r.OK {
		t.Errorf("a user not verified: %+v; want refused", r)
	}
	if len(s.receipts) != 1 {
		t.Errorf("%d receipts; want only payload A's", len(s.receipts))
	}
}

// checkExport checks an export that holds approval ap-1's receipt and the
// key.
func checkExport(t *testing.T, exportKey ed25519.PrivateKey, key audit.PasskeyKey, r audit.PasskeyReceipt) audit.Report {
	t.Helper()
	var b bytes.Buffer
	w := audit.NewWriter(&b, exportKey)
	body, _ := json.Marshal(r)
	rec := audit.Record{Seq: 1, At: 1, Kind: audit.Receipt, Operation: "op-1", Ref: r.Approval, Body: body, PrevHash: audit.ZeroHash}
	rec.Hash = rec.Sum()
	if err := w.Add(rec); err != nil {
		t.Fatal(err)
	}
	w.Keys([]audit.PasskeyKey{key})
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Check(&b, exportKey.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
