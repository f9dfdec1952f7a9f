// Package passkeytest is an approver's passkey in software for the tests of
// the journal and the binary: a P-256 key that signs WebAuthn authenticator
// data and client data over an approval's challenge (audit.Challenge), as a
// phone does, giving receipts and the credential as the journal keeps it.
// The passkey package's own tests go further, down to attestation objects,
// and Chromium's virtual authenticator further still.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// RPID is the relying party the signer's credentials are made for.
const RPID = "review.example.org"

// Signer is one approver's passkey.
type Signer struct {
	User    policy.UserID
	Key     *ecdsa.PrivateKey
	ID      []byte
	Counter uint32 // the next assertion carries Counter+1
}

// New returns a passkey for user, with a fresh key.
func New(user policy.UserID) *Signer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // the system's randomness failed
	}
	id := make([]byte, 16)
	rand.Read(id)
	return &Signer{User: user, Key: key, ID: id}
}

// Credential is the signer's credential as the journal keeps it.
func (s *Signer) Credential() journal.PasskeyCredential {
	der, err := x509.MarshalPKIXPublicKey(&s.Key.PublicKey)
	if err != nil {
		panic(err)
	}
	pub, _ := s.Key.PublicKey.Bytes()
	return journal.PasskeyCredential{User: s.User, ID: s.ID, PublicKey: pub, SPKI: der, Algorithm: -7, RPID: RPID, Enrolled: time.Now()}
}

// Receipt signs approval of the payload whose SHA-256 is payloadSHA256 (hex),
// its counter moved on, with the user present and verified.
func (s *Signer) Receipt(approval, payloadSHA256 string) audit.PasskeyReceipt {
	s.Counter++
	challenge, err := audit.Challenge(approval, payloadSHA256)
	if err != nil {
		panic(err)
	}
	cd, _ := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": base64.RawURLEncoding.EncodeToString(challenge), "origin": "https://" + RPID})
	rp := sha256.Sum256([]byte(RPID))
	ad := binary.BigEndian.AppendUint32(append(rp[:], 0x05), s.Counter)
	cdh := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.Key, digest[:])
	if err != nil {
		panic(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	return audit.PasskeyReceipt{Approval: approval, PayloadSHA256: payloadSHA256, By: int64(s.User), Credential: b64(s.ID),
		AuthenticatorData: b64(ad), ClientDataJSON: b64(cd), Signature: b64(sig)}
}
