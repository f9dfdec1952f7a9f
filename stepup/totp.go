// Package stepup is the arithmetic of the second factor an approver gives
// beside a tap (policy step_up): TOTP secrets, codes matched to their time
// step, the enrolment's URI and QR. It keeps nothing: the journal holds each
// person's secret and the last step they used, and checks a code under its
// row's lock (journal.UseTOTP), so that a code approves once on any replica.
package stepup

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
	"github.com/skip2/go-qrcode"
)

// The shape of every code: what authenticator apps do by default (RFC 6238
// with HMAC-SHA1, six digits, thirty seconds).
const (
	Digits = 6
	Period = 30 * time.Second
	// Skew is how many steps before or after now a code may come from: a phone
	// clock a little off, a code typed as it turned.
	Skew = 1
)

// The lockout: MaxWrong wrong, reused or malformed codes in a row lock a
// person's factor for LockFor, so that six digits cannot be guessed through
// the chat.
const (
	MaxWrong = 5
	LockFor  = 15 * time.Minute
)

// secretBytes is the size of a new secret: 160 bits, as RFC 4226 advises.
const secretBytes = 20

// Errors of Match.
var (
	// ErrMalformed refuses a code that is not Digits digits.
	ErrMalformed = errors.New("a code is 6 digits")
	// ErrWrong refuses a code that matches no step near now.
	ErrWrong = errors.New("wrong code")
	// ErrReused refuses a code of a step used already (or an earlier one).
	ErrReused = errors.New("code used already")
)

// NewSecret returns a fresh random secret, base32 without padding, as
// authenticator apps take it.
func NewSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("stepup: new secret: %w", err)
	}
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b), nil
}

// Step is the time step t falls in.
func Step(t time.Time) int64 { return t.Unix() / int64(Period/time.Second) }

// Code returns the code of secret at t: what the person's app shows then.
func Code(secret string, t time.Time) (string, error) {
	return code(secret, t, Digits, otp.AlgorithmSHA1)
}

// CodeAt returns the code of secret for time step step.
func CodeAt(secret string, step int64) (string, error) {
	return Code(secret, time.Unix(step*int64(Period/time.Second), 0))
}

func code(secret string, t time.Time, digits otp.Digits, alg otp.Algorithm) (string, error) {
	c, err := totp.GenerateCodeCustom(secret, t, totp.ValidateOpts{Period: uint(Period / time.Second), Digits: digits, Algorithm: alg})
	if err != nil {
		return "", fmt.Errorf("stepup: code: %w", err) // the library's words name no secret
	}
	return c, nil
}

// Match returns the time step whose code c is, among the steps within Skew of
// now and after last (the step the person used last; 0 for none). The codes
// are compared in constant time. Refusals: ErrMalformed, ErrReused (c is the
// code of last or an earlier step near now), ErrWrong.
func Match(secret, c string, now time.Time, last int64) (int64, error) {
	c = strings.TrimSpace(c)
	if len(c) != Digits || strings.Trim(c, "0123456789") != "" {
		return 0, ErrMalformed
	}
	found, used := int64(0), false
	for step := Step(now) - Skew; step <= Step(now)+Skew; step++ {
		want, err := CodeAt(secret, step)
		if err != nil {
			return 0, err
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(c)) != 1 {
			continue
		}
		if step <= last {
			used = true
			continue
		}
		if found == 0 {
			found = step
		}
	}
	switch {
	case found != 0:
		return found, nil
	case used:
		return 0, ErrReused
	}
	return 0, ErrWrong
}

// URI is the otpauth:// URI that enrols secret in an authenticator app, under
// issuer and account (what the app lists).
func URI(secret, issuer, account string) string {
	v := url.Values{}
	v.Set("secret", secret)
	v.Set("issuer", issuer)
	v.Set("algorithm", "SHA1")
	v.Set("digits", fmt.Sprint(Digits))
	v.Set("period", fmt.Sprint(int(Period/time.Second)))
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + issuer + ":" + account, RawQuery: v.Encode()}
	return u.String()
}

// QR returns uri as a QR code drawn in text, for a terminal: two rows of
// modules per line, dark on light.
func QR(uri string) (string, error) {
	q, err := qrcode.New(uri, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("stepup: QR code: %w", err)
	}
	return q.ToSmallString(false), nil
}
