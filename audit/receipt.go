package audit

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// A receipt is an approver's own signature of an approval: the WebAuthn
// assertion their passkey made over a challenge that commits to the approval
// and the payload's SHA-256. The journal keeps it in the audit chain (a record
// of kind Receipt, in the transaction that records the vote it proves), an
// export carries the approvers' public keys (a Passkeys line), and
// VerifyReceipt checks one offline with nothing but the key: this file uses
// the standard library alone, apart from the server's WebAuthn library, so
// that the check does not trust the code that accepted the assertion.

// Receipt is the kind of the audit record that carries a receipt.
const Receipt = "receipt"

// ChallengePrefix separates the challenges of approvals from any other use of
// the same keys and hashes.
const ChallengePrefix = "countersign/passkey-approval/v1"

// Errors of receipts.
var (
	ErrBadHash    = errors.New("not a payload hash: want 64 hex digits")
	ErrBadReceipt = errors.New("receipt does not verify")
)

// Challenge returns the WebAuthn challenge of an approval's assertion:
//
//	SHA-256( "countersign/passkey-approval/v1" || 0x00 ||
//	         uint32 big-endian length of the approval id || the approval id ||
//	         the payload's SHA-256, its 32 bytes )
//
// so that an assertion over it signs exactly that approval of exactly that
// payload, and nothing else. payloadSHA256 is the hash in hex, as the journal
// and the cards show it; anything else is ErrBadHash.
func Challenge(approval, payloadSHA256 string) ([]byte, error) {
	sum, err := hex.DecodeString(payloadSHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("audit: challenge of %s: %w", approval, ErrBadHash)
	}
	h := sha256.New()
	h.Write([]byte(ChallengePrefix))
	h.Write([]byte{0})
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(approval))))
	h.Write([]byte(approval))
	h.Write(sum)
	return h.Sum(nil), nil
}

// PasskeyReceipt is the body of a receipt record: who approved what, and the
// assertion that proves it, its parts in base64url (no padding) as WebAuthn
// carries them.
type PasskeyReceipt struct {
	Approval          string `json:"approval"`
	PayloadSHA256     string `json:"payload_sha256"`
	By                int64  `json:"by"`         // the approver's Telegram user id
	Credential        string `json:"credential"` // the credential id
	AuthenticatorData string `json:"authenticator_data"`
	ClientDataJSON    string `json:"client_data_json"`
	Signature         string `json:"signature"`
}

// PasskeyKey is an approver's passkey public key as an export carries it: the
// credential it belongs to, the relying party it was made for, its COSE
// algorithm (-7 ES256, -35 ES384, -36 ES512, -8 EdDSA, -257 RS256) and the key
// itself, a DER SubjectPublicKeyInfo (RFC 5280) in standard base64, which
// openssl and every X.509 library read.
type PasskeyKey struct {
	User       int64  `json:"user"`
	Credential string `json:"credential"` // base64url, no padding
	RPID       string `json:"rp_id"`
	Algorithm  int64  `json:"alg"`
	SPKI       string `json:"spki"`
	Enrolled   int64  `json:"enrolled"` // Unix milliseconds
}

// Fingerprint returns the SHA-256 of the key's DER, in hex: what a person
// compares with the one printed at enrolment.
func (k PasskeyKey) Fingerprint() string {
	der, err := base64.StdEncoding.DecodeString(k.SPKI)
	if err != nil {
		return "(malformed key)"
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// The flags of authenticator data that a receipt must carry: the user was
// present, and verified (a PIN or biometric, not only a touch).
const (
	flagUP = 0x01
	flagUV = 0x04
)

// VerifyReceipt checks a receipt offline against the key of its credential:
// the key is the approver's (its user and credential are the receipt's); the
// client data is of an assertion ("webauthn.get") whose challenge is
// Challenge of the approval and payload hash the receipt claims, and whose
// origin is the key's relying party; the authenticator data is for that
// relying party (its RP ID hash) with the user present and verified; and the
// signature over the authenticator data and the client data's SHA-256 is the
// key's. The error wraps ErrBadReceipt and says which of these failed.
func VerifyReceipt(r PasskeyReceipt, k PasskeyKey) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadReceipt}, args...)...)
	}
	switch {
	case k.User != r.By:
		return bad("the key of credential %s is user %d's, and the receipt says %d approved", short64(r.Credential), k.User, r.By)
	case k.Credential != r.Credential:
		return bad("made by credential %s, not %s", short64(r.Credential), short64(k.Credential))
	}
	authData, err1 := base64.RawURLEncoding.DecodeString(r.AuthenticatorData)
	clientData, err2 := base64.RawURLEncoding.DecodeString(r.ClientDataJSON)
	sig, err3 := base64.RawURLEncoding.DecodeString(r.Signature)
	if err := errors.Join(err1, err2, err3); err != nil {
		return bad("a part of the assertion is not base64url")
	}
	if err := checkClientData(clientData, r, k.RPID); err != nil {
		return bad("%v", err)
	}
	if err := checkAuthData(authData, k.RPID); err != nil {
		return bad("%v", err)
	}
	pub, err := parseSPKI(k.SPKI)
	if err != nil {
		return bad("the key of credential %s: %v", short64(k.Credential), err)
	}
	cd := sha256.Sum256(clientData)
	if !verifySignature(pub, k.Algorithm, append(bytes.Clone(authData), cd[:]...), sig) {
		return bad("the signature is not credential %s's over this assertion: signed by another key, or the assertion was changed", short64(k.Credential))
	}
	return nil
}

// clientData is the part of WebAuthn's client data a receipt is checked by.
type clientData struct {
	Type      string `json:"type"`
	Challenge string `json:"challenge"`
	Origin    string `json:"origin"`
}

func checkClientData(raw []byte, r PasskeyReceipt, rpID string) error {
	var cd clientData
	if err := json.Unmarshal(raw, &cd); err != nil {
		return fmt.Errorf("the client data is not JSON: %v", err)
	}
	want, err := Challenge(r.Approval, r.PayloadSHA256)
	if err != nil {
		return err
	}
	got, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(cd.Challenge, "="))
	switch {
	case cd.Type != "webauthn.get":
		return fmt.Errorf("the client data is of a %q, not an assertion (webauthn.get)", cd.Type)
	case err != nil || !bytes.Equal(got, want):
		return fmt.Errorf("the signed challenge is not the one of approval %s of payload %.12s: the assertion was made for another approval or another payload", r.Approval, r.PayloadSHA256)
	case !originOf(cd.Origin, rpID):
		return fmt.Errorf("made on %q, which is not of the relying party %s", cd.Origin, rpID)
	}
	return nil
}

// originOf says whether origin is a web origin whose host is rpID or a name
// under it, as WebAuthn allows.
func originOf(origin, rpID string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && u.Hostname() == "localhost")) || u.Path != "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return rpID != "" && (host == rpID || strings.HasSuffix(host, "."+rpID))
}

func checkAuthData(a []byte, rpID string) error {
	if len(a) < 37 {
		return fmt.Errorf("the authenticator data is %d bytes, fewer than 37", len(a))
	}
	want := sha256.Sum256([]byte(rpID))
	switch flags := a[32]; {
	case !bytes.Equal(a[:32], want[:]):
		return fmt.Errorf("the authenticator data is not for the relying party %s (its RP ID hash differs)", rpID)
	case flags&flagUP == 0:
		return errors.New("the user was not present (flag UP unset)")
	case flags&flagUV == 0:
		return errors.New("the user was not verified (flag UV unset): a touch without PIN or biometric")
	}
	return nil
}

func parseSPKI(s string) (crypto.PublicKey, error) {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not base64")
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("not a SubjectPublicKeyInfo: %v", err)
	}
	return pub, nil
}

// verifySignature checks a WebAuthn signature by its COSE algorithm.
func verifySignature(pub crypto.PublicKey, alg int64, data, sig []byte) bool {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		var sum []byte
		switch {
		case alg == -7 && k.Curve == elliptic.P256():
			s := sha256.Sum256(data)
			sum = s[:]
		case alg == -35 && k.Curve == elliptic.P384():
			s := sha512.Sum384(data)
			sum = s[:]
		case alg == -36 && k.Curve == elliptic.P521():
			s := sha512.Sum512(data)
			sum = s[:]
		default:
			return false
		}
		return ecdsa.VerifyASN1(k, sum, sig)
	case ed25519.PublicKey:
		return alg == -8 && ed25519.Verify(k, data, sig)
	case *rsa.PublicKey:
		s := sha256.Sum256(data)
		return alg == -257 && rsa.VerifyPKCS1v15(k, crypto.SHA256, s[:], sig) == nil
	}
	return false
}

// short64 shortens a credential id for a message.
func short64(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// Counter returns the signature counter the receipt's authenticator data
// carries.
func (r PasskeyReceipt) Counter() (uint32, error) {
	a, err := base64.RawURLEncoding.DecodeString(r.AuthenticatorData)
	if err != nil || len(a) < 37 {
		return 0, fmt.Errorf("%w: malformed authenticator data", ErrBadReceipt)
	}
	return binary.BigEndian.Uint32(a[33:37]), nil
}
