package passkey

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/countersign/countersign/audit"
)

// BeginApproval returns the options for the browser's
// navigator.credentials.get (JSON, as {"publicKey": …}) with which an approver
// approves approval of the payload whose SHA-256 is payloadSHA256 (hex): the
// challenge is audit.Challenge of the two, the credentials allowed are the
// approver's, and the user must be verified. Nothing is kept: FinishApproval
// computes the same challenge again. ErrNoKey when the approver has none.
func (rp *RP) BeginApproval(user int64, approval, payloadSHA256 string, enrolled []Credential) ([]byte, error) {
	if len(enrolled) == 0 {
		return nil, fmt.Errorf("passkey: approval %s by %d: %w", approval, user, ErrNoKey)
	}
	challenge, err := audit.Challenge(approval, payloadSHA256)
	if err != nil {
		return nil, fmt.Errorf("passkey: %w", err)
	}
	assertion, _, err := rp.w.BeginLogin(approver{id: user, creds: enrolled},
		webauthn.WithChallenge(challenge), webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, fmt.Errorf("passkey: begin approval %s by %d: %w", approval, user, err)
	}
	return json.Marshal(assertion)
}

// Assertion is the browser's answer to BeginApproval's options, parsed.
type Assertion struct {
	parsed *protocol.ParsedCredentialAssertionData
	// Credential is the id of the credential that signed.
	Credential []byte
}

// ParseAssertion reads the PublicKeyCredential that navigator.credentials.get
// gave, as JSON (its toJSON form: id, rawId, type, and response's
// clientDataJSON, authenticatorData, signature and userHandle in base64url).
// Its parts are parsed, not yet checked; the error wraps ErrRefused.
func ParseAssertion(response []byte) (Assertion, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return Assertion{}, fmt.Errorf("%w: %s", ErrRefused, detail(err))
	}
	return Assertion{parsed: parsed, Credential: parsed.RawID}, nil
}

// Approved is an assertion that FinishApproval took: the credential that
// signed, the counter to keep for it (in the transaction that records the
// vote), and the receipt for the audit chain.
type Approved struct {
	Credential []byte
	Counter    uint32
	Receipt    audit.PasskeyReceipt
}

// FinishApproval checks an assertion of approval of the payload whose SHA-256
// is payloadSHA256, by user, against the credentials enrolled (their counters
// as last kept): the credential is one of the user's; the client data is an
// assertion of the challenge that commits to approval and payloadSHA256, made
// on the review page's origin; the authenticator data is for its RP ID, with
// the user present and verified; the signature is the credential's; and its
// counter moved on from the one kept (ErrCounter; two zeros pass, as
// authenticators that keep no counter send). The error wraps ErrRefused,
// ErrCounter or ErrNoKey.
func (rp *RP) FinishApproval(user int64, approval, payloadSHA256 string, enrolled []Credential, a Assertion) (Approved, error) {
	if len(enrolled) == 0 {
		return Approved{}, fmt.Errorf("passkey: approval %s by %d: %w", approval, user, ErrNoKey)
	}
	if a.parsed == nil {
		return Approved{}, fmt.Errorf("%w: no assertion", ErrRefused)
	}
	challenge, err := audit.Challenge(approval, payloadSHA256)
	if err != nil {
		return Approved{}, fmt.Errorf("passkey: %w", err)
	}
	// The library checks the challenge too; checked first here, the refusal
	// says what it means.
	if a.parsed.Response.CollectedClientData.Challenge != protocol.URLEncodedBase64(challenge).String() {
		return Approved{}, fmt.Errorf("%w: approval %s by %d: the assertion signs another approval or another payload than approval %s of payload %.12s (its challenge differs)", ErrRefused, approval, user, approval, payloadSHA256)
	}
	session := webauthn.SessionData{
		Challenge:        protocol.URLEncodedBase64(challenge).String(),
		RelyingPartyID:   rp.ID,
		UserID:           UserHandle(user),
		UserVerification: protocol.VerificationRequired,
	}
	for _, c := range enrolled {
		session.AllowedCredentialIDs = append(session.AllowedCredentialIDs, c.ID)
	}
	if _, err := rp.w.ValidateLogin(approver{id: user, creds: enrolled}, session, a.parsed); err != nil {
		return Approved{}, fmt.Errorf("%w: approval %s by %d with credential %s: %s", ErrRefused, approval, user, shortID(a.Credential), detail(err))
	}
	var kept Credential
	for _, c := range enrolled {
		if bytes.Equal(c.ID, a.Credential) {
			kept = c
		}
	}
	counter := a.parsed.Response.AuthenticatorData.Counter
	if (counter != 0 || kept.Counter != 0) && counter <= kept.Counter {
		return Approved{}, fmt.Errorf("passkey: approval %s by %d with credential %s: counter %d after %d: %w", approval, user, shortID(a.Credential), counter, kept.Counter, ErrCounter)
	}
	raw := a.parsed.Raw.AssertionResponse
	return Approved{
		Credential: a.Credential,
		Counter:    counter,
		Receipt: audit.PasskeyReceipt{
			Approval:          approval,
			PayloadSHA256:     payloadSHA256,
			By:                user,
			Credential:        base64.RawURLEncoding.EncodeToString(a.Credential),
			AuthenticatorData: base64.RawURLEncoding.EncodeToString(raw.AuthenticatorData),
			ClientDataJSON:    base64.RawURLEncoding.EncodeToString(raw.ClientDataJSON),
			Signature:         base64.RawURLEncoding.EncodeToString(raw.Signature),
		},
	}, nil
}
