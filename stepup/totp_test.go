package stepup

import (
	"encoding/base32"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
)

// TestCodesAreRFC6238s: the test vectors of RFC 6238's appendix B, for each
// of its three hashes (eight digits, as the RFC gives them).
func TestCodesAreRFC6238s(t *testing.T) {
	b32 := func(s string) string {
		return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(s))
	}
	seeds := map[otp.Algorithm]string{
		otp.AlgorithmSHA1:   b32("12345678901234567890"),
		otp.AlgorithmSHA256: b32("12345678901234567890123456789012"),
		otp.AlgorithmSHA512: b32("1234567890123456789012345678901234567890123456789012345678901234"),
	}
	vectors := []struct {
		unix int64
		want map[otp.Algorithm]string
	}{
		{59, map[otp.Algorithm]string{otp.AlgorithmSHA1: "94287082", otp.AlgorithmSHA256: "46119246", otp.AlgorithmSHA512: "90693936"}},
		{1111111109, map[otp.Algorithm]string{otp.AlgorithmSHA1: "07081804", otp.AlgorithmSHA256: "68084774", otp.AlgorithmSHA512: "25091201"}},
		{1111111111, map[otp.Algorithm]string{otp.AlgorithmSHA1: "14050471", otp.AlgorithmSHA256: "67062674", otp.AlgorithmSHA512: "99943326"}},
		{1234567890, map[otp.Algorithm]string{otp.AlgorithmSHA1: "89005924", otp.AlgorithmSHA256: "91819424", otp.AlgorithmSHA512: "93441116"}},
		{2000000000, map[otp.Algorithm]string{otp.AlgorithmSHA1: "69279037", otp.AlgorithmSHA256: "90698825", otp.AlgorithmSHA512: "38618901"}},
		{20000000000, map[otp.Algorithm]string{otp.AlgorithmSHA1: "65353130", otp.AlgorithmSHA256: "77737706", otp.AlgorithmSHA512: "47863826"}},
	}
	for _, v := range vectors {
		for alg, want := range v.want {
			got, err := code(seeds[alg], time.Unix(v.unix, 0), otp.DigitsEight, alg)
			if err != nil || got != want {
				t.Errorf("%s at %d = %q, %v; want %q", alg, v.unix, got, err, want)
			}
		}
	}
	// Six digits, SHA-1: the last six of the eight.
	if got, _ := Code(seeds[otp.AlgorithmSHA1], time.Unix(59, 0)); got != "287082" {
		t.Errorf("Code at 59 = %q, want 287082", got)
	}
}

// TestMatchTakesACodeOnceWithinOneStepOfNow: a code of the step before, of
// now or of the step after is taken, and says its step; two steps off, it is
// wrong; a code of the step last used, or of one before it, is reused; a code
// that is not six digits is malformed.
func TestMatchTakesACodeOnceWithinOneStepOfNow(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 21, 0, 10, 0, time.UTC)
	s := Step(now)
	at := func(step int64) string {
		c, err := CodeAt(secret, step)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name     string
		code     string
		last     int64
		wantStep int64
		wantErr  error
	}{
		{"now", at(s), 0, s, nil},
		{"step before", at(s - 1), 0, s - 1, nil},
		{"step after", at(s + 1), 0, s + 1, nil},
		{"spaces around", " " + at(s) + "\n", 0, s, nil},
		{"two steps before", at(s - 2), 0, 0, ErrWrong},
		{"two steps after", at(s + 2), 0, 0, ErrWrong},
		{"now, used", at(s), s, 0, ErrReused},
		{"step before, after now was used", at(s - 1), s, 0, ErrReused},
		{"step after, now used", at(s + 1), s, s + 1, nil},
		{"five digits", at(s)[:5], 0, 0, ErrMalformed},
		{"letters", "12a456", 0, 0, ErrMalformed},
		{"seven digits", at(s) + "1", 0, 0, ErrMalformed},
		{"empty", "", 0, 0, ErrMalformed},
	}
	for _, tt := range tests {
		got, err := Match(secret, tt.code, now, tt.last)
		if got != tt.wantStep || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: Match = %d, %v; want %d, %v", tt.name, got, err, tt.wantStep, tt.wantErr)
		}
	}
	// A wrong code that happens to be right is one in a million; one that
	// differs from the right one is wrong.
	wrong := []byte(at(s))
	wrong[0] = '0' + (wrong[0]-'0'+1)%10
	if _, err := Match(secret, string(wrong), now, 0); !errors.Is(err, ErrWrong) {
		t.Errorf("a code one digit off = %v, want ErrWrong", err)
	}
}

// TestURIEnrolsTheSecretAnAppReads: the URI parses as an authenticator app
// reads it, with the secret, the issuer, the account and the shape of the
// codes; the QR code draws something.
func TestURIEnrolsTheSecretAnAppReads(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if other, _ := NewSecret(); other == secret || len(secret) != 32 {
		t.Fatalf("secrets %q and %q: want two different, of 160 bits", secret, other)
	}
	uri := URI(secret, "Countersign", "42")
	k, err := otp.NewKeyFromURL(uri)
	if err != nil {
		t.Fatal(err)
	}
	if k.Secret() != secret || k.Issuer() != "Countersign" || k.AccountName() != "42" || k.Period() != 30 || k.Digits() != otp.DigitsSix || k.Type() != "totp" {
		t.Errorf("the URI reads back as %s", k)
	}
	qr, err := QR(uri)
	if err != nil || strings.Count(qr, "\n") < 20 {
		t.Errorf("QR = %d lines, %v", strings.Count(qr, "\n"), err)
	}
}
