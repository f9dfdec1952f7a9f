package journal_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// TestAnExportedPasskeyVoteWithoutItsReceiptIsCaughtOffline: a passkey vote
// recorded through the journal, exported as "countersign audit export" does,
// then rewritten by a forger who holds the server and its export key: the
// receipt dropped (the export from the vote on, and the whole of it), or
// dropped with the vote passed off as a TOTP one, every record after chained
// again and the export signed again. The offline check names the record that
// gives it away. The journal writes the bodies and the check reads them, so
// this fails if either side renames the passkey factor or the approved
// decision, or the check stops reading a vote's factor.
func TestAnExportedPasskeyVoteWithoutItsReceiptIsCaughtOffline(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		j := open(t, name, newClock().Now)
		op, a, _ := approvedWithPasskey(t, j)
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
		pub := key.Public().(ed25519.PublicKey)
		export := func(since int64) []byte {
			var b bytes.Buffer
			if _, err := j.ExportAudit(ctx, &b, key, since); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		whole := export(0)
		var voteSeq int64
		for _, rec := range exportedRecords(t, whole) {
			if rec.Kind == audit.Vote && rec.Ref == a.ID {
				voteSeq = rec.Seq
			}
		}
		if voteSeq == 0 {
			t.Fatalf("the export holds no vote record of %s:\n%s", a.ID, whole)
		}
		fromVote := export(voteSeq)
		dropReceipt := func(rec *audit.Record) bool { return rec.Kind != audit.Receipt }
		asTOTP := func(rec *audit.Record) bool {
			if rec.Kind == audit.Vote {
				var f audit.VoteFact
				if err := json.Unmarshal(rec.Body, &f); err != nil {
					t.Fatal(err)
				}
				f.StepUp, f.PayloadSHA256 = string(policy.FactorTOTP), ""
				rec.Body, _ = json.Marshal(f)
			}
			return dropReceipt(rec)
		}
		for _, tc := range []struct {
			name string
			file []byte
			kind string // of the record named; "" for an export that verifies
			want string
		}{
			{"as exported", whole, "", ""},
			{"as exported, from the vote on", fromVote, "", ""},
			{"chained and signed again, unchanged", forgeExport(t, whole, key, func(*audit.Record) bool { return true }), "", ""},
			{"the receipt dropped", forgeExport(t, whole, key, dropReceipt), audit.Decision,
				"approval " + a.ID + " asked a passkey of each of 1 approver(s), and the export holds 0 receipt(s) of it"},
			{"the receipt dropped from the export from the vote on", forgeExport(t, fromVote, key, dropReceipt), audit.Vote,
				"the vote of 42 on " + a.ID + " says a passkey was given, and the export holds no receipt of it"},
			{"the receipt dropped and the vote passed off as a TOTP one", forgeExport(t, whole, key, asTOTP), audit.Decision,
				"approval " + a.ID + " asked a passkey of each of 1 approver(s), and the export holds 0 receipt(s) of it"},
		} {
			rep, err := audit.Check(bytes.NewReader(tc.file), pub)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			f := rep.Fault
			switch {
			case tc.want == "" && (f != nil || rep.Receipts != 1 || len(rep.Keys) != 1):
				t.Errorf("%s: fault %v, %d receipts, %d keys; want it verified, alice's receipt with her key", tc.name, f, rep.Receipts, len(rep.Keys))
			case tc.want == "":
			case f == nil || f.Record == nil:
				t.Errorf("%s: fault %v; want the %s record of %s named", tc.name, f, tc.kind, op.ID)
			case f.Record.Kind != tc.kind || f.Record.Operation != op.ID || !strings.Contains(f.Record.Problem, tc.want):
				t.Errorf("%s: fault %s; want the %s record of %s, saying %q", tc.name, f, tc.kind, op.ID, tc.want)
			}
		}
	})
}

// exportedRecords returns the records of an export, without its passkeys
// and signature lines.
func exportedRecords(t *testing.T, export []byte) []audit.Record {
	t.Helper()
	var recs []audit.Record
	for _, line := range bytes.SplitAfter(export, []byte("\n")) {
		var probe map[string]json.RawMessage
		if len(line) == 0 || json.Unmarshal(line, &probe) != nil {
			continue
		}
		if _, ok := probe["kind"]; !ok {
			continue
		}
		var rec audit.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// forgeExport rewrites an export as a forger who holds the export key can:
// keep reports whether each record stays, after changing it if it likes;
// those kept are chained again from where the export began, in order, and
// written with the export's passkeys line and a new signature by key.
func forgeExport(t *testing.T, export []byte, key ed25519.PrivateKey, keep func(*audit.Record) bool) []byte {
	t.Helper()
	recs := exportedRecords(t, export)
	var keys audit.Passkeys
	for _, line := range bytes.SplitAfter(export, []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"passkeys":`)) {
			if err := json.Unmarshal(line, &keys); err != nil {
				t.Fatal(err)
			}
		}
	}
	var b bytes.Buffer
	w := audit.NewWriter(&b, key)
	seq, prev := recs[0].Seq, recs[0].PrevHash
	for _, rec := range recs {
		if !keep(&rec) {
			continue
		}
		rec.Seq, rec.PrevHash = seq, prev
		rec.Hash = rec.Sum()
		seq, prev = seq+1, rec.Hash
		if err := w.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if keys.Passkeys != nil {
		if err := w.Keys(keys.Passkeys); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
