package audit_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
)

// fact is a record before it is chained: kind, operation, ref and body.
type fact struct {
	kind, op, ref string
	body          any
}

// signedExport chains facts from seq 1, adds the passkeys line with keys (none
// when keys is nil), and signs it all with key: what an export of a journal
// would be, or what a forger who holds the server (its export key included)
// can write.
func signedExport(t *testing.T, key ed25519.PrivateKey, keys []audit.PasskeyKey, facts ...fact) string {
	t.Helper()
	var b bytes.Buffer
	w := audit.NewWriter(&b, key)
	prev := audit.ZeroHash
	for i, f := range facts {
		body, err := json.Marshal(f.body)
		if err != nil {
			t.Fatal(err)
		}
		r := audit.Record{Seq: int64(i + 1), At: 1_800_000_000_000 + int64(i), Kind: f.kind, Operation: f.op, Ref: f.ref, Body: body, PrevHash: prev}
		r.Hash = r.Sum()
		prev = r.Hash
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if keys != nil {
		if err := w.Keys(keys); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// approvalWithPasskey is the trail of approval ap-1 of payload hash asked,
// and voted by alice with a passkey whose receipt is r.
func approvalWithPasskey(hash string, r audit.PasskeyReceipt) []fact {
	return []fact{
		{audit.Approval, "op-1", "ap-1", map[string]any{"approval": "ap-1", "payload_sha256": hash, "requester": 7, "step_up": "passkey"}},
		{audit.Vote, "op-1", "ap-1", map[string]any{"approval": "ap-1", "by": 111, "of": 1, "required": 1, "step_up": "passkey", "payload_sha256": hash}},
		{audit.Receipt, "op-1", "ap-1", r},
	}
}

func TestAnExportsReceiptsAreVerifiedWithItsKeysAlone(t *testing.T) {
	t.Parallel()
	server := seed(9) // the export key: a forger who holds the server holds it too
	pub := server.Public().(ed25519.PublicKey)
	alice, mallory := newSigner(t, 111), newSigner(t, 111)
	a, b := sum("send A"), sum("send B")
	honest := alice.receipt(t, "ap-1", a, assertion{})
	keys := []audit.PasskeyKey{alice.Key(t)}

	claimsB := honest
	claimsB.PayloadSHA256 = b
	otherApproval := alice.receipt(t, "ap-9", a, assertion{})
	otherApproval.Approval = "ap-1" // signed for ap-9, put on ap-1
	otherKey := mallory.receipt(t, "ap-1", b, assertion{})
	otherKey.Credential = honest.Credential // mallory's key, alice's credential

	approvalB := approvalWithPasskey(b, honest) // the journal says B was asked; alice signed A
	noReceipt := approvalWithPasskey(a, honest)[:2]
	refSwapped := approvalWithPasskey(a, honest)
	refSwapped[2].ref = "ap-2"
	// A stolen server's approval: asked with a passkey, decided approved with
	// a tap's vote and no receipt.
	tapOnly := []fact{approvalWithPasskey(a, honest)[0],
		{audit.Vote, "op-1", "ap-1", map[string]any{"approval": "ap-1", "by": 111, "of": 1, "required": 1}},
		{audit.Decision, "op-1", "ap-1", map[string]any{"approval": "ap-1", "decision": "approved", "by": 111}}}
	decided := append(approvalWithPasskey(a, honest), fact{audit.Decision, "op-1", "ap-1", map[string]any{"approval": "ap-1", "decision": "approved", "by": 111}})
	// An export from the vote on (-since), the approval record left before
	// it: the vote says payload B was approved, its receipt signs A.
	voteOfB := approvalWithPasskey(a, honest)[1:]
	voteOfB[0].body = map[string]any{"approval": "ap-1", "by": 111, "of": 1, "required": 1, "step_up": "passkey", "payload_sha256": b}

	for _, tc := range []struct {
		name, file string
		want       string // "" for an export that verifies
	}{
		{"honest", signedExport(t, server, keys, approvalWithPasskey(a, honest)...), ""},
		{"honest, decided", signedExport(t, server, keys, decided...), ""},
		{"approved with a tap where a passkey was asked", signedExport(t, server, keys, tapOnly...),
			"line 3: record 3 (decision of op-1): approval ap-1 asked a passkey of each of 1 approver(s), and the export holds 0 receipt(s) of it"},
		{"a receipt that claims another payload hash", signedExport(t, server, keys, approvalWithPasskey(b, claimsB)...),
			"line 3: record 3 (receipt of op-1): receipt does not verify: the signed challenge is not the one of approval ap-1 of payload " + b[:12]},
		{"a receipt signed for another approval", signedExport(t, server, keys, approvalWithPasskey(a, otherApproval)...),
			"record 3 (receipt of op-1): receipt does not verify: the signed challenge is not the one of approval ap-1"},
		{"a receipt signed by another key", signedExport(t, server, keys, approvalWithPasskey(b, otherKey)...),
			"record 3 (receipt of op-1): receipt does not verify: the signature is not credential"},
		{"an approval record of another payload than the receipt's", signedExport(t, server, keys, approvalB...),
			"record 3 (receipt of op-1): the receipt claims payload " + a[:12] + ", and approval ap-1 was asked for payload " + b[:12]},
		{"a receipt put on another approval's record", signedExport(t, server, keys, refSwapped...),
			"record 3 (receipt of op-1): the receipt is of approval ap-1, and the record names ap-2"},
		{"a vote with a passkey and no receipt", signedExport(t, server, keys, noReceipt...),
			"line 2: record 2 (vote of op-1): the vote of 111 on ap-1 says a passkey was given, and the export holds no receipt of it"},
		{"a vote of another payload than its receipt's, without the approval record", signedExport(t, server, keys, voteOfB...),
			"line 1: record 1 (vote of op-1): the vote of 111 on ap-1 was given for payload " + b[:12] + ", and its receipt signs payload " + a[:12]},
		{"no passkeys line", signedExport(t, server, nil, approvalWithPasskey(a, honest)...),
			"record 3 (receipt of op-1): no public key of credential"},
		{"the key left out", signedExport(t, server, []audit.PasskeyKey{newSigner(t, 111).Key(t)}, approvalWithPasskey(a, honest)...),
			"no public key of credential"},
	} {
		rep, err := audit.Check(strings.NewReader(tc.file), pub)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.want == "" && (rep.Fault != nil || rep.Receipts != 1 || len(rep.Keys) != 1):
			t.Errorf("%s: %v, %d receipts, %d keys; want it verified, 1 receipt, 1 key", tc.name, rep.Fault, rep.Receipts, len(rep.Keys))
		case tc.want != "" && (rep.Fault == nil || !strings.Contains(rep.Fault.String(), tc.want)):
			t.Errorf("%s: %v\n want a fault with %q", tc.name, rep.Fault, tc.want)
		}
	}
}

func TestThePasskeysLineIsSignedAndLast(t *testing.T) {
	t.Parallel()
	server := seed(9)
	pub := server.Public().(ed25519.PublicKey)
	alice := newSigner(t, 111)
	a := sum("send A")
	good := signedExport(t, server, []audit.PasskeyKey{alice.Key(t)}, approvalWithPasskey(a, alice.receipt(t, "ap-1", a, assertion{}))...)
	ls := lines([]byte(good))
	keysLine := ls[len(ls)-2]
	edited := strings.Replace(good, `"rp_id":"review.example.org"`, `"rp_id":"evil.example.org"`, 1)
	moved := strings.Join(append(append(append([]string{}, ls[:2]...), keysLine, ls[2]), ls[len(ls)-1]), "")
	for _, tc := range []struct{ name, file, want string }{
		{"a key edited", edited, "the signature does not match"},
		{"the line moved before a record", moved, "line 4: a record after the passkeys line"},
		{"a second passkeys line", strings.Replace(good, keysLine, keysLine+keysLine, 1), "a second passkeys line"},
	} {
		rep, err := audit.Check(strings.NewReader(tc.file), pub)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Fault == nil || !strings.Contains(rep.Fault.String(), tc.want) {
			t.Errorf("%s: %v, want a fault with %q", tc.name, rep.Fault, tc.want)
		}
	}
}
