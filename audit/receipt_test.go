package audit_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

// TestTheChallengeIsTheDocumentedHash: the challenge of approval "ap-1" of the
// empty payload, computed apart from the code with printf, xxd and sha256sum:
//
//	(printf 'countersign/passkey-approval/v1\x00\x00\x00\x00\x04ap-1'; echo -n $H | xxd -r -p) | sha256sum
func TestTheChallengeIsTheDocumentedHash(t *testing.T) {
	t.Parallel()
	empty := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	got, err := audit.Challenge("ap-1", empty)
	if want := "4a1f48fa9def7c553a151f4d1b7b948ffd66127831c905e80e4851535758fe31"; err != nil || hex.EncodeToString(got) != want {
		t.Errorf("Challenge(ap-1, empty) = %x, %v; want %s", got, err, want)
	}
	for _, bad := range []string{"", "e3b0", strings.ToUpper(empty)[:63] + "g"} {
		if _, err := audit.Challenge("ap-1", bad); !errors.Is(err, audit.ErrBadHash) {
			t.Errorf("Challenge(ap-1, %q) = %v, want ErrBadHash", bad, err)
		}
	}
}

// signer is an approver's passkey in software, as far as a receipt needs one:
// a P-256 key that signs authenticator data and client data as WebAuthn does.
type signer struct {
	key  *ecdsa.PrivateKey
	id   []byte
	user int64
}

const testRPID = "review.example.org"

func newSigner(t *testing.T, user int64) signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	rand.Read(id)
	return signer{key: key, id: id, user: user}
}

// Key is the signer's key as an export carries it.
func (s signer) Key(t *testing.T) audit.PasskeyKey {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&s.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return audit.PasskeyKey{User: s.user, Credential: base64.RawURLEncoding.EncodeToString(s.id), RPID: testRPID, Algorithm: -7, SPKI: base64.StdEncoding.EncodeToString(der)}
}

// assertion is what a signer is asked to sign; zero fields are the honest ones.
type assertion struct {
	typ, origin, rpID string
	flags             byte
	challenge         []byte // instead of the approval's
	counter           uint32
}

// receipt signs approval of payloadSHA256 as a passkey would.
func (s signer) receipt(t *testing.T, approval, payloadSHA256 string, a assertion) audit.PasskeyReceipt {
	t.Helper()
	if a.typ == "" {
		a.typ = "webauthn.get"
	}
	if a.origin == "" {
		a.origin = "https://" + testRPID
	}
	if a.rpID == "" {
		a.rpID = testRPID
	}
	if a.flags == 0 {
		a.flags = 0x05 // UP, UV
	}
	if a.challenge == nil {
		var err error
		if a.challenge, err = audit.Challenge(approval, payloadSHA256); err != nil {
			t.Fatal(err)
		}
	}
	cd, _ := json.Marshal(map[string]any{"type": a.typ, "challenge": base64.RawURLEncoding.EncodeToString(a.challenge), "origin": a.origin})
	rp := sha256.Sum256([]byte(a.rpID))
	ad := binary.BigEndian.AppendUint32(append(rp[:], a.flags), a.counter)
	cdh := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	return audit.PasskeyReceipt{Approval: approval, PayloadSHA256: payloadSHA256, By: s.user, Credential: b64(s.id),
		AuthenticatorData: b64(ad), ClientDataJSON: b64(cd), Signature: b64(sig)}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestVerifyReceipt(t *testing.T) {
	t.Parallel()
	alice, bob := newSigner(t, 111), newSigner(t, 222)
	a, b := sum("payload A"), sum("payload B")
	honest := alice.receipt(t, "ap-1", a, assertion{})
	otherHash, otherApproval, otherSig := honest, honest, honest
	otherHash.PayloadSHA256 = b
	otherApproval.Approval = "ap-2"
	otherSig.Signature = bob.receipt(t, "ap-1", a, assertion{}).Signature
	otherCD := honest
	otherCD.ClientDataJSON = alice.receipt(t, "ap-1", b, assertion{}).ClientDataJSON
	for _, tc := range []struct {
		name string
		r    audit.PasskeyReceipt
		key  audit.PasskeyKey
		says string // "" for a receipt that verifies
	}{
		{"honest", honest, alice.Key(t), ""},
		{"claims another payload hash", otherHash, alice.Key(t), "another approval or another payload"},
		{"claims another approval", otherApproval, alice.Key(t), "another approval or another payload"},
		{"signed by another key", otherSig, alice.Key(t), "signature is not credential"},
		{"its client data swapped for one of payload B", otherCD, alice.Key(t), "another approval or another payload"},
		{"checked with another approver's key", honest, bob.Key(t), "user 222's"},
		{"without user verification", alice.receipt(t, "ap-1", a, assertion{flags: 0x01}), alice.Key(t), "not verified"},
		{"without user presence", alice.receipt(t, "ap-1", a, assertion{flags: 0x04}), alice.Key(t), "not present"},
		{"for another RP ID", alice.receipt(t, "ap-1", a, assertion{rpID: "evil.example.org"}), alice.Key(t), "RP ID hash"},
		{"made on another origin", alice.receipt(t, "ap-1", a, assertion{origin: "https://evil.example.org"}), alice.Key(t), "not of the relying party"},
		{"made on http", alice.receipt(t, "ap-1", a, assertion{origin: "http://" + testRPID}), alice.Key(t), "not of the relying party"},
		{"made on a host that only ends like it", alice.receipt(t, "ap-1", a, assertion{origin: "https://not" + testRPID}), alice.Key(t), "not of the relying party"},
		{"of a registration", alice.receipt(t, "ap-1", a, assertion{typ: "webauthn.create"}), alice.Key(t), "not an assertion"},
		{"over a random challenge", alice.receipt(t, "ap-1", a, assertion{challenge: make([]byte, 32)}), alice.Key(t), "another approval or another payload"},
	} {
		err := audit.VerifyReceipt(tc.r, tc.key)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%s: %v, want it verified", tc.name, err)
		case tc.says != "" && (!errors.Is(err, audit.ErrBadReceipt) || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%s: %v, want ErrBadReceipt saying %q", tc.name, err, tc.says)
		}
	}
}
