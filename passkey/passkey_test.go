package passkey_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/passkey"
)

const (
	reviewURL = "https://review.example.org/review"
	origin    = "https://review.example.org"
	rpID      = "review.example.org"
	alice     = int64(111)
)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

var payloadA, payloadB = hashOf("send A to chat 222"), hashOf("send B to chat 222")

func mustRP(t *testing.T) *passkey.RP {
	t.Helper()
	rp, err := passkey.NewRP(reviewURL)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// enrol enrols a software authenticator for alice and returns both.
func enrol(t *testing.T, rp *passkey.RP, a *authenticator) passkey.Credential {
	t.Helper()
	options, e, err := rp.BeginEnrol(alice, "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := rp.FinishEnrol(e, "alice", a.create(t, options))
	if err != nil {
		t.Fatalf("enrol: %v", err)
	}
	return cred
}

// approve has a sign approval of hash as the options of BeginApproval ask,
// and finishes it as approval of finishHash.
func approve(t *testing.T, rp *passkey.RP, a *authenticator, cred passkey.Credential, approval, hash, finishApproval, finishHash string) (passkey.Approved, error) {
	t.Helper()
	options, err := rp.BeginApproval(alice, approval, hash, []passkey.Credential{cred})
	if err != nil {
		t.Fatal(err)
	}
	return finish(t, rp, cred, finishApproval, finishHash, a.get(t, options))
}

func finish(t *testing.T, rp *passkey.RP, cred passkey.Credential, approval, hash string, response []byte) (passkey.Approved, error) {
	t.Helper()
	as, err := passkey.ParseAssertion(response)
	if err != nil {
		return passkey.Approved{}, err
	}
	return rp.FinishApproval(alice, approval, hash, []passkey.Credential{cred}, as)
}

func TestNewRPTakesTheReviewPagesOriginAndHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, origin, id, refused string }{
		{"https://Review.Example.org:8443/review/x", "https://review.example.org:8443", "review.example.org", ""},
		{"http://localhost:8080/review", "http://localhost:8080", "localhost", ""},
		{"http://review.example.org/review", "", "", "not https"},
		{"https://127.0.0.1:8443/review", "", "", "IP address"},
		{"https://[::1]:8443/review", "", "", "IP address"},
		{"review.example.org", "", "", "no host"},
	} {
		rp, err := passkey.NewRP(tc.url)
		if tc.refused != "" {
			if !errors.Is(err, passkey.ErrBadRPURL) || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("NewRP(%q) = %v, want ErrBadRPURL saying %q", tc.url, err, tc.refused)
			}
			continue
		}
		if err != nil || rp.Origin != tc.origin || rp.ID != tc.id {
			t.Errorf("NewRP(%q) = %+v, %v; want origin %s, RP ID %s", tc.url, rp, err, tc.origin, tc.id)
		}
	}
}

func TestAnApprovalSignedWithAPasskeyMakesAReceiptThatVerifiesOffline(t *testing.T) {
	t.Parallel()
	rp := mustRP(t)
	a := newAuthenticator(t, rpID, origin)
	cred := enrol(t, rp, a)
	if cred.User != alice || string(a.user) != "111" || cred.Algorithm != -7 {
		t.Fatalf("enrolled %+v with user handle %q; want alice's, ES256, handle 111", cred, a.user)
	}
	got, err := approve(t, rp, a, cred, "ap-1", payloadA, "ap-1", payloadA)
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if got.Counter != 1 || got.Receipt.Approval != "ap-1" || got.Receipt.PayloadSHA256 != payloadA || got.Receipt.By != alice {
		t.Fatalf("approved %+v; want counter 1, a receipt of ap-1 for payload A by alice", got)
	}
	key := keyOf(t, cred, rp.ID)
	if err := audit.VerifyReceipt(got.Receipt, key); err != nil {
		t.Fatalf("the receipt does not verify offline: %v", err)
	}
}

func TestAnAssertionIsRefused(t *testing.T) {
	t.Parallel()
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, tc := range []struct {
		name string
		// bend makes the authenticator or the assertion bad; it returns the
		// response to finish with, or nil for an honest get.
		bend                 func(a *authenticator, options []byte) []byte
		finishAs, finishHash string
		want                 error
		says                 string
	}{
		{"for payload A, finished for payload B", nil, "ap-1", payloadB, passkey.ErrRefused, "challenge"},
		{"for approval ap-1, finished for ap-2", nil, "ap-2", payloadA, passkey.ErrRefused, "challenge"},
		{"made on another origin", func(a *authenticator, o []byte) []byte { a.origin = "https://evil.example.org"; return nil }, "ap-1", payloadA, passkey.ErrRefused, "origin"},
		{"made for another RP ID", func(a *authenticator, o []byte) []byte { a.rpID = "evil.example.org"; return nil }, "ap-1", payloadA, passkey.ErrRefused, "RP"},
		{"without user verification", func(a *authenticator, o []byte) []byte { a.uv = false; return nil }, "ap-1", payloadA, passkey.ErrRefused, "verif"},
		{"signed by another key", func(a *authenticator, o []byte) []byte {
			a.counter++
			return a.sign(t, other, a.clientData(t, "webauthn.get", o))
		}, "ap-1", payloadA, passkey.ErrRefused, "ignature"},
		{"of a registration's type", func(a *authenticator, o []byte) []byte {
			a.counter++
			return a.sign(t, a.key, a.clientData(t, "webauthn.create", o))
		}, "ap-1", payloadA, passkey.ErrRefused, "type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rp := mustRP(t)
			a := newAuthenticator(t, rpID, origin)
			cred := enrol(t, rp, a)
			options, err := rp.BeginApproval(alice, "ap-1", payloadA, []passkey.Credential{cred})
			if err != nil {
				t.Fatal(err)
			}
			var resp []byte
			if tc.bend != nil {
				resp = tc.bend(a, options)
			}
			if resp == nil {
				resp = a.get(t, options)
			}
			_, err = finish(t, rp, cred, tc.finishAs, tc.finishHash, resp)
			if !errors.Is(err, tc.want) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.says)) {
				t.Errorf("finish = %v; want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestAReplayedAssertionIsRefused(t *testing.T) {
	t.Parallel()
	rp := mustRP(t)
	a := newAuthenticator(t, rpID, origin)
	cred := enrol(t, rp, a)
	options, err := rp.BeginApproval(alice, "ap-1", payloadA, []passkey.Credential{cred})
	if err != nil {
		t.Fatal(err)
	}
	resp := a.get(t, options)
	got, err := finish(t, rp, cred, "ap-1", payloadA, resp)
	if err != nil {
		t.Fatal(err)
	}
	cred.Counter = got.Counter // as the journal keeps it with the vote
	if _, err := finish(t, rp, cred, "ap-1", payloadA, resp); !errors.Is(err, passkey.ErrCounter) {
		t.Errorf("the same assertion again: %v, want ErrCounter", err)
	}
}

func TestACounterGoingBackwardsIsRefused(t *testing.T) {
	t.Parallel()
	rp := mustRP(t)
	a := newAuthenticator(t, rpID, origin)
	cred := enrol(t, rp, a)
	a.counter = 41
	got, err := approve(t, rp, a, cred, "ap-1", payloadA, "ap-1", payloadA)
	if err != nil || got.Counter != 42 {
		t.Fatalf("approve = %+v, %v; want counter 42", got, err)
	}
	cred.Counter = got.Counter
	a.counter = 10 // a clone of the authenticator, from before
	if _, err := approve(t, rp, a, cred, "ap-2", payloadB, "ap-2", payloadB); !errors.Is(err, passkey.ErrCounter) || !strings.Contains(err.Error(), "counter 11 after 42") {
		t.Errorf("a counter gone back: %v, want ErrCounter (11 after 42)", err)
	}
}

func TestAnAuthenticatorWithoutACounterIsTaken(t *testing.T) {
	t.Parallel()
	rp := mustRP(t)
	a := newAuthenticator(t, rpID, origin)
	cred := enrol(t, rp, a)
	options, _ := rp.BeginApproval(alice, "ap-1", payloadA, []passkey.Credential{cred})
	a.counter = 0
	resp := a.sign(t, a.key, a.clientData(t, "webauthn.get", options)) // counter 0, as synced passkeys send
	if got, err := finish(t, rp, cred, "ap-1", payloadA, resp); err != nil || got.Counter != 0 {
		t.Errorf("a zero counter after a zero counter: %+v, %v; want taken", got, err)
	}
}

func TestAnotherApproversCredentialIsRefused(t *testing.T) {
	t.Parallel()
	rp := mustRP(t)
	a := newAuthenticator(t, rpID, origin)
	cred := enrol(t, rp, a)
	b := newAuthenticator(t, rpID, origin)
	bob := enrol(t, rp, b)
	options, _ := rp.BeginApproval(alice, "ap-1", payloadA, []passkey.Credential{cred})
	as, err := passkey.ParseAssertion(b.get(t, options))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.FinishApproval(alice, "ap-1", payloadA, []passkey.Credential{cred}, as); !errors.Is(err, passkey.ErrRefused) {
		t.Errorf("bob's passkey for alice's vote: %v, want ErrRefused", err)
	}
	_ = bob
	if _, err := rp.BeginApproval(alice, "ap-1", payloadA, nil); !errors.Is(err, passkey.ErrNoKey) {
		t.Errorf("BeginApproval without a credential: %v, want ErrNoKey", err)
	}
}

func TestAnEnrolmentIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		bend func(a *authenticator)
		says string
	}{
		{"without user verification", func(a *authenticator) { a.uv = false }, "verif"},
		{"made on another origin", func(a *authenticator) { a.origin = "https://evil.example.org" }, "origin"},
		{"made for another RP ID", func(a *authenticator) { a.rpID = "evil.example.org" }, "RP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rp := mustRP(t)
			a := newAuthenticator(t, rpID, origin)
			tc.bend(a)
			options, e, err := rp.BeginEnrol(alice, "alice", nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rp.FinishEnrol(e, "alice", a.create(t, options))
			if !errors.Is(err, passkey.ErrEnrol) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.says)) {
				t.Errorf("FinishEnrol = %v; want ErrEnrol saying %q", err, tc.says)
			}
		})
	}
}

// keyOf is cred's public key as an audit export carries it (the journal's
// PasskeyCredential.Key, from the same SPKI).
func keyOf(t *testing.T, cred passkey.Credential, rpID string) audit.PasskeyKey {
	t.Helper()
	spki, err := passkey.SPKI(cred.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return audit.PasskeyKey{User: cred.User, Credential: base64.RawURLEncoding.EncodeToString(cred.ID), RPID: rpID,
		Algorithm: cred.Algorithm, SPKI: base64.StdEncoding.EncodeToString(spki)}
}
