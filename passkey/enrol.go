package passkey

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Enrolment is a registration begun and not yet finished: what the caller
// keeps between BeginEnrol and FinishEnrol (as JSON, say), and gives to
// FinishEnrol once. Its challenge is random.
type Enrolment struct {
	User    int64                `json:"user"`
	Session webauthn.SessionData `json:"session"`
}

// BeginEnrol starts an approver's enrolment: the options for the browser's
// navigator.credentials.create (JSON, as {"publicKey": …}) and the enrolment
// to keep. The credential asked for must verify its user (PIN or biometric);
// the approver's credentials already enrolled are excluded, so an
// authenticator is not enrolled twice.
func (rp *RP) BeginEnrol(user int64, name string, enrolled []Credential) (options []byte, e Enrolment, err error) {
	a := approver{id: user, name: name, creds: enrolled}
	exclude := make([]protocol.CredentialDescriptor, len(enrolled))
	for i, c := range a.WebAuthnCredentials() {
		exclude[i] = c.Descriptor()
	}
	creation, session, err := rp.w.BeginRegistration(a, webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, Enrolment{}, fmt.Errorf("passkey: begin the enrolment of %d: %w", user, err)
	}
	session.Expires = time.Now().Add(Timeout)
	options, err = json.Marshal(creation)
	if err != nil {
		return nil, Enrolment{}, fmt.Errorf("passkey: begin the enrolment of %d: %w", user, err)
	}
	return options, Enrolment{User: user, Session: *session}, nil
}

// FinishEnrol checks the browser's answer to BeginEnrol's options (the
// PublicKeyCredential as JSON: id, rawId, type, response.clientDataJSON and
// response.attestationObject): its challenge, origin and RP ID, the user
// present and verified, a key of an algorithm offered; and returns the new
// credential, its counter as the authenticator gave it. Attestation is not
// asked for, and not trusted: the credential is trusted because the enrolment
// was begun on the machine. The error wraps ErrEnrol.
func (rp *RP) FinishEnrol(e Enrolment, name string, response []byte) (Credential, error) {
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %s", ErrEnrol, detail(err))
	}
	c, err := rp.w.CreateCredential(approver{id: e.User, name: name}, e.Session, parsed)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %s", ErrEnrol, detail(err))
	}
	key, err := webauthncose.ParsePublicKey(c.PublicKey)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: its public key: %v", ErrEnrol, err)
	}
	if _, err := spkiOf(key); err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrEnrol, err)
	}
	return Credential{
		User:      e.User,
		ID:        c.ID,
		PublicKey: c.PublicKey,
		Algorithm: algorithmOf(key),
		Counter:   c.Authenticator.SignCount,
		Backup:    c.Flags.BackupEligible,
		Enrolled:  time.Now(),
	}, nil
}

// algorithmOf is the COSE algorithm of a parsed key.
func algorithmOf(key any) int64 {
	switch k := key.(type) {
	case webauthncose.EC2PublicKeyData:
		return k.Algorithm
	case webauthncose.OKPPublicKeyData:
		return k.Algorithm
	case webauthncose.RSAPublicKeyData:
		return k.Algorithm
	}
	return 0
}

// SPKI returns a COSE_Key's public key as a DER SubjectPublicKeyInfo, the
// form an audit export carries: ES256, ES384, ES512, EdDSA (Ed25519) and RSA
// keys.
func SPKI(cose []byte) ([]byte, error) {
	key, err := webauthncose.ParsePublicKey(cose)
	if err != nil {
		return nil, fmt.Errorf("passkey: a COSE key: %w", err)
	}
	return spkiOf(key)
}

func spkiOf(key any) ([]byte, error) {
	var pub any // an *ecdsa.PublicKey, an ed25519.PublicKey or an *rsa.PublicKey
	switch k := key.(type) {
	case webauthncose.EC2PublicKeyData:
		if k.Algorithm != int64(webauthncose.AlgES256) && k.Algorithm != int64(webauthncose.AlgES384) && k.Algorithm != int64(webauthncose.AlgES512) {
			return nil, fmt.Errorf("passkey: an EC2 key of algorithm %d, which receipts do not verify", k.Algorithm)
		}
		e, err := k.ToECDSA()
		if err != nil {
			return nil, fmt.Errorf("passkey: an EC2 key: %w", err)
		}
		pub = e
	case webauthncose.OKPPublicKeyData:
		if len(k.XCoord) != ed25519.PublicKeySize {
			return nil, errors.New("passkey: an OKP key that is not Ed25519")
		}
		pub = ed25519.PublicKey(k.XCoord)
	case webauthncose.RSAPublicKeyData:
		if k.Algorithm != int64(webauthncose.AlgRS256) {
			return nil, fmt.Errorf("passkey: an RSA key of algorithm %d, which receipts do not verify", k.Algorithm)
		}
		e, err := webauthncose.ParseRSAPublicKeyDataExponent(&k)
		if err != nil {
			return nil, fmt.Errorf("passkey: an RSA key: %w", err)
		}
		pub = &rsa.PublicKey{N: new(big.Int).SetBytes(k.Modulus), E: e}
	default:
		return nil, fmt.Errorf("passkey: a key of type %T, which receipts do not verify", key)
	}
	return x509.MarshalPKIXPublicKey(pub)
}

// detail is what a go-webauthn error says, its details included.
func detail(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if pe.DevInfo != "" {
			return pe.Details + " (" + pe.DevInfo + ")"
		}
		return pe.Details
	}
	return err.Error()
}
