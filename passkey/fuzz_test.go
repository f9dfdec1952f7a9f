package passkey_test

import (
	"errors"
	"testing"

	"github.com/countersign/countersign/passkey"
)

// FuzzParseAssertion feeds the assertion parser what a browser (or anyone who
// reaches the review page) may post: it never panics, and nothing it parses
// from bytes that are not a real assertion is taken.
func FuzzParseAssertion(f *testing.F) {
	rp, err := passkey.NewRP(reviewURL)
	if err != nil {
		f.Fatal(err)
	}
	a := newAuthenticator(f, rpID, origin)
	options, e, _ := rp.BeginEnrol(alice, "alice", nil)
	cred, err := rp.FinishEnrol(e, "alice", a.create(f, options))
	if err != nil {
		f.Fatal(err)
	}
	options, _ = rp.BeginApproval(alice, "ap-1", payloadA, []passkey.Credential{cred})
	valid := a.get(f, options)
	f.Add(valid)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"","signature":""}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		as, err := passkey.ParseAssertion(data)
		if err != nil {
			if !errors.Is(err, passkey.ErrRefused) {
				t.Fatalf("ParseAssertion: %v, not ErrRefused", err)
			}
			return
		}
		got, err := rp.FinishApproval(alice, "ap-1", payloadB, []passkey.Credential{cred}, as)
		if err == nil {
			t.Fatalf("an assertion made for payload A was taken for payload B: %+v", got)
		}
		rp.FinishApproval(alice, "ap-1", payloadA, []passkey.Credential{cred}, as) // must not panic
	})
}
