package chromium

import (
	"context"
	"fmt"
)

// Authenticator is a virtual WebAuthn authenticator of a page (DevTools'
// WebAuthn domain): a platform authenticator speaking CTAP2 over the
// "internal" transport, with resident keys, that verifies its user (as a
// phone's PIN or fingerprint does) and is touched at once when asked, so that
// a test enrols and uses a passkey as a person would, with no prompt.
type Authenticator struct {
	p  *Page
	ID string
}

// AddAuthenticator enables WebAuthn's DevTools domain in the page and adds a
// virtual authenticator to it; navigator.credentials of the page uses it from
// then on.
func (p *Page) AddAuthenticator(ctx context.Context) (*Authenticator, error) {
	if err := p.b.call(ctx, p.session, "WebAuthn.enable", map[string]any{"enableUI": false}, nil); err != nil {
		return nil, fmt.Errorf("chromium: WebAuthn.enable: %w", err)
	}
	var r struct {
		AuthenticatorID string `json:"authenticatorId"`
	}
	err := p.b.call(ctx, p.session, "WebAuthn.addVirtualAuthenticator", map[string]any{"options": map[string]any{
		"protocol":                    "ctap2",
		"transport":                   "internal",
		"hasResidentKey":              true,
		"hasUserVerification":         true,
		"isUserVerified":              true,
		"automaticPresenceSimulation": true,
	}}, &r)
	if err != nil {
		return nil, fmt.Errorf("chromium: WebAuthn.addVirtualAuthenticator: %w", err)
	}
	return &Authenticator{p: p, ID: r.AuthenticatorID}, nil
}

// Credential is a credential a virtual authenticator holds, as DevTools gives
// it: ids and the private key (PKCS#8) in base64, and its signature counter.
type Credential struct {
	CredentialID         string `json:"credentialId"`
	IsResidentCredential bool   `json:"isResidentCredential"`
	RPID                 string `json:"rpId,omitempty"`
	PrivateKey           string `json:"privateKey"`
	UserHandle           string `json:"userHandle,omitempty"`
	SignCount            int    `json:"signCount"`
}

// Credentials returns the credentials the authenticator holds.
func (a *Authenticator) Credentials(ctx context.Context) ([]Credential, error) {
	var r struct {
		Credentials []Credential `json:"credentials"`
	}
	if err := a.p.b.call(ctx, a.p.session, "WebAuthn.getCredentials", map[string]any{"authenticatorId": a.ID}, &r); err != nil {
		return nil, fmt.Errorf("chromium: WebAuthn.getCredentials: %w", err)
	}
	return r.Credentials, nil
}

// SetCredential puts c in the authenticator in place of the credential of
// the same id: a test winds its counter back, as a clone of the authenticator
// would have it.
func (a *Authenticator) SetCredential(ctx context.Context, c Credential) error {
	if err := a.p.b.call(ctx, a.p.session, "WebAuthn.removeCredential", map[string]any{"authenticatorId": a.ID, "credentialId": c.CredentialID}, nil); err != nil {
		return fmt.Errorf("chromium: WebAuthn.removeCredential: %w", err)
	}
	if err := a.p.b.call(ctx, a.p.session, "WebAuthn.addCredential", map[string]any{"authenticatorId": a.ID, "credential": c}, nil); err != nil {
		return fmt.Errorf("chromium: WebAuthn.addCredential: %w", err)
	}
	return nil
}

// SetUserVerified says whether the authenticator verifies its user from now
// on: false is a device whose PIN or fingerprint check fails.
func (a *Authenticator) SetUserVerified(ctx context.Context, verified bool) error {
	err := a.p.b.call(ctx, a.p.session, "WebAuthn.setUserVerified", map[string]any{"authenticatorId": a.ID, "isUserVerified": verified}, nil)
	if err != nil {
		return fmt.Errorf("chromium: WebAuthn.setUserVerified: %w", err)
	}
	return nil
}
