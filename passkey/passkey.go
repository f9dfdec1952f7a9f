// Package passkey is the second factor of an approval made with a passkey
// (WebAuthn, through github.com/go-webauthn/webauthn): the relying party of
// the review page, an approver's enrolment, and at approval an assertion
// whose challenge commits to the approval and the payload's SHA-256
// (audit.Challenge), verified here on the server (origin, RP ID, user
// verification, signature, a counter that never goes back) and kept as a
// receipt (audit.PasskeyReceipt) that the audit package checks again offline
// with the public key alone.
//
// It keeps nothing: the caller stores an enrolment between its two steps and
// a credential's counter with the vote it proves, in one transaction. The
// challenge of an approval is single use because it names one approval, an
// approver votes on an approval once, and a counter that did not move on is
// refused.
package passkey

import (
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Errors that say why an assertion or an enrolment was refused; each comes
// wrapped with the detail.
var (
	ErrRefused  = errors.New("passkey assertion refused")
	ErrCounter  = errors.New("passkey signature counter did not move on: a replayed assertion or a cloned authenticator")
	ErrNoKey    = errors.New("no passkey enrolled")
	ErrEnrol    = errors.New("passkey enrolment refused")
	ErrBadRPURL = errors.New("not a review page URL a passkey can be made for")
)

// Timeout is how long the browser is given to make a credential or an
// assertion.
const Timeout = 5 * time.Minute

// RP is the relying party: the review page, by its origin and RP ID (its
// host name). A passkey is made for one RP ID and works on no other.
type RP struct {
	Origin string
	ID     string
	w      *webauthn.WebAuthn
}

// NewRP returns the relying party of the review page at reviewURL: an https
// URL (or http://localhost, which browsers also count as secure) on a host
// name; an IP address is no RP ID.
func NewRP(reviewURL string) (*RP, error) {
	u, err := url.Parse(reviewURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%w: %q has no host", ErrBadRPURL, reviewURL)
	}
	host := strings.ToLower(u.Hostname())
	if u.Scheme != "https" && !(u.Scheme == "http" && host == "localhost") {
		return nil, fmt.Errorf("%w: %s is not https (WebAuthn runs only on a secure origin)", ErrBadRPURL, reviewURL)
	}
	if host == "" || strings.Trim(host, "0123456789.") == "" || strings.Contains(host, ":") {
		return nil, fmt.Errorf("%w: %s is an IP address, and an RP ID is a host name", ErrBadRPURL, host)
	}
	origin := u.Scheme + "://" + strings.ToLower(u.Host)
	w, err := webauthn.New(&webauthn.Config{
		RPID:          host,
		RPDisplayName: "Countersign",
		RPOrigins:     []string{origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationRequired,
		},
		AttestationPreference: protocol.PreferNoAttestation,
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: Timeout, TimeoutUVD: Timeout},
			Registration: webauthn.TimeoutConfig{Timeout: Timeout, TimeoutUVD: Timeout},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: relying party %s: %w", origin, err)
	}
	return &RP{Origin: origin, ID: host, w: w}, nil
}

// Credential is an approver's enrolled passkey as the journal keeps it.
type Credential struct {
	User      int64     // the approver's Telegram user id
	ID        []byte    // the credential id
	PublicKey []byte    // the COSE_Key the authenticator gave
	Algorithm int64     // its COSE algorithm
	Counter   uint32    // the last signature counter seen
	Backup    bool      // backup eligible (a synced passkey), as enrolled
	Enrolled  time.Time // when
}

// UserHandle is the WebAuthn user handle of a Telegram user: the id in
// decimal, so that a passkey names the approver it belongs to.
func UserHandle(user int64) []byte { return []byte(strconv.FormatInt(user, 10)) }

// approver is a user as go-webauthn asks for one.
type approver struct {
	id    int64
	name  string
	creds []Credential
}

func (a approver) WebAuthnID() []byte          { return UserHandle(a.id) }
func (a approver) WebAuthnName() string        { return a.name }
func (a approver) WebAuthnDisplayName() string { return a.name }
func (a approver) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, len(a.creds))
	for i, c := range a.creds {
		out[i] = webauthn.Credential{
			ID:        c.ID,
			PublicKey: c.PublicKey,
			Flags:     webauthn.CredentialFlags{UserPresent: true, UserVerified: true, BackupEligible: c.Backup},
			Authenticator: webauthn.Authenticator{
				SignCount: c.Counter,
			},
		}
	}
	return out
}

// shortID is a credential id, shortened, for a message.
func shortID(id []byte) string {
	s := base64.RawURLEncoding.EncodeToString(id)
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// Script is the browser's side of both ceremonies, for a page to include:
// countersignPasskey.enrol(beginURL, finishURL, extra) and
// countersignPasskey.approve(beginURL, finishURL, extra) post extra (an
// object) to beginURL for the options, run the browser's WebAuthn, post extra
// with the credential ({"credential": its toJSON form}) to finishURL and
// resolve to what it answers ({error} when refused).
//
//go:embed passkey.js
var Script string
