package passkey_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// authenticator is a platform authenticator in software: a P-256 key, a
// credential id and a signature counter, making real attestation objects,
// authenticator data, client data and ECDSA signatures as a phone does. Its
// fields are what a test changes to make a bad one: the RP ID it signs for,
// the origin its "browser" reports, whether it verifies the user.
type authenticator struct {
	key     *ecdsa.PrivateKey
	id      []byte
	counter uint32
	rpID    string
	origin  string
	uv      bool
	user    []byte // the user handle it was enrolled with
}

func newAuthenticator(t testing.TB, rpID, origin string) *authenticator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	rand.Read(id)
	return &authenticator{key: key, id: id, rpID: rpID, origin: origin, uv: true}
}

const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

// authData is rpIdHash || flags || counter, then attested credential data
// when at is given.
func (a *authenticator) authData(at []byte) []byte {
	rp := sha256.Sum256([]byte(a.rpID))
	flags := byte(flagUP)
	if a.uv {
		flags |= flagUV
	}
	if at != nil {
		flags |= flagAT
	}
	out := append(rp[:], flags)
	out = binary.BigEndian.AppendUint32(out, a.counter)
	return append(out, at...)
}

// coseKey is the credential's public key as a COSE_Key (EC2, ES256, P-256).
func (a *authenticator) coseKey(t testing.TB) []byte {
	t.Helper()
	pub, err := a.key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	b, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: pub[1:33], -3: pub[33:]})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clientData is the client data JSON of a ceremony of type typ (webauthn.create
// or webauthn.get) over the options' challenge.
func (a *authenticator) clientData(t testing.TB, typ string, options []byte) []byte {
	t.Helper()
	var o struct {
		PublicKey struct {
			Challenge string `json:"challenge"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &o); err != nil || o.PublicKey.Challenge == "" {
		t.Fatalf("options without a challenge: %s (%v)", options, err)
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": o.PublicKey.Challenge, "origin": a.origin, "crossOrigin": false})
	return b
}

var b64 = base64.RawURLEncoding.EncodeToString

// create answers navigator.credentials.create's options: a credential with
// attestation "none".
func (a *authenticator) create(t testing.TB, options []byte) []byte {
	t.Helper()
	var o struct {
		PublicKey struct {
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		} `json:"publicKey"`
	}
	json.Unmarshal(options, &o)
	a.user, _ = base64.RawURLEncoding.DecodeString(o.PublicKey.User.ID)
	at := make([]byte, 16) // AAGUID, zero
	at = binary.BigEndian.AppendUint16(at, uint16(len(a.id)))
	at = append(append(at, a.id...), a.coseKey(t)...)
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(at)})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := json.Marshal(map[string]any{
		"id": b64(a.id), "rawId": b64(a.id), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64(a.clientData(t, "webauthn.create", options)), "attestationObject": b64(obj), "transports": []string{"internal"}},
	})
	return resp
}

// get answers navigator.credentials.get's options: the counter moves on, and
// the key signs authenticator data || SHA-256(client data).
func (a *authenticator) get(t testing.TB, options []byte) []byte {
	t.Helper()
	a.counter++
	return a.sign(t, a.key, a.clientData(t, "webauthn.get", options))
}

func (a *authenticator) sign(t testing.TB, key *ecdsa.PrivateKey, clientData []byte) []byte {
	t.Helper()
	ad := a.authData(nil)
	cd := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte{}, ad...), cd[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := json.Marshal(map[string]any{
		"id": b64(a.id), "rawId": b64(a.id), "type": "public-key",
		"response": map[string]any{"clientDataJSON": b64(clientData), "authenticatorData": b64(ad), "signature": b64(sig), "userHandle": b64(a.user)},
	})
	return resp
}
