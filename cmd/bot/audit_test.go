package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/passkeytest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// auditedData returns a data folder whose journal holds a send approved and a
// send rejected.
func auditedData(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	j, err := journal.Open(ctx, filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	p, err := policy.Load("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []journal.Decision{journal.DecideApprove, journal.DecideReject} {
		task, err := j.CreateTask(ctx, journal.Task{Requester: 7, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
			Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		a := j.NewApproval(op, 7, time.Hour)
		for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
			if err := j.Move(ctx, op.ID, m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := j.Decide(ctx, a.ID, d, 42); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

func TestAuditCommands(t *testing.T) {
	data := auditedData(t)
	seed := strings.Repeat("k", 32)
	key := base64.StdEncoding.EncodeToString([]byte(seed))
	pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed([]byte(seed)).Public().(ed25519.PublicKey))
	env := map[string]string{"COUNTERSIGN_AUDIT_KEY": key}
	file := filepath.Join(t.TempDir(), "audit.jsonl")

	r := runMain(t, "", nil, "audit", "verify", "-data", data)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: 13 records, head ") {
		t.Errorf("verify: exit %d\n%s%s; want ok with 13 records", r.code, r.stdout, r.stderr)
	}
	if r := runMain(t, "", env, "audit", "export", "-data", data, "-o", file); r.code != 0 || !strings.Contains(r.stderr, "exported 13 records to "+file) {
		t.Errorf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export file: %v, %v; want mode 0600", fi, err)
	}
	if r := runMain(t, "", nil, "audit", "verify", "-pub", pub, file); r.code != 0 || !strings.HasPrefix(r.stdout, "ok: 13 records") {
		t.Errorf("verify -pub: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stdout := runMain(t, "", env, "audit", "export", "-data", data, "-since", "12")
	if got := strings.Count(stdout.stdout, "\n"); stdout.code != 0 || got != 3 {
		t.Errorf("export -since 12 to stdout: exit %d, %d lines; want 2 records and the signature", stdout.code, got)
	}

	edited, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(edited), `"decision":"rejected"`, `"decision":"approved"`, 1)), 0o600)
	if r := runMain(t, "", nil, "audit", "verify", "-pub", pub, file); r.code != 1 || !strings.Contains(r.stdout, "bad: "+file+": line 12: record 12 (decision of op-") {
		t.Errorf("verify -pub of an edited export: exit %d\n%s%s; want 1 naming record 12", r.code, r.stdout, r.stderr)
	}

	db, err := sql.Open("sqlite3", filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE transitions SET reason = 'approved by 1' WHERE to_state = 'rejected'"); err != nil {
		t.Fatal(err)
	}
	if r := runMain(t, "", nil, "audit", "verify", "-data", data); r.code != 1 || !strings.HasPrefix(r.stdout, "bad: record 13 (transition of op-") {
		t.Errorf("verify of an edited journal: exit %d\n%s%s; want 1 naming record 13", r.code, r.stdout, r.stderr)
	}
}

func TestAuditRefusals(t *testing.T) {
	data := auditedData(t)
	bad := "bm90IGEga2V5IGF0IGFsbA==" // base64, 16 bytes
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string // on stderr
	}{
		{"no subcommand", nil, []string{"audit"}, 2, "missing subcommand"},
		{"unknown subcommand", nil, []string{"audit", "sign"}, 2, `unknown subcommand "sign"`},
		{"a file without -pub", nil, []string{"audit", "verify", "-data", data, "x.jsonl"}, 2, "go together"},
		{"-pub without a file", nil, []string{"audit", "verify", "-pub", "AAAA"}, 2, "go together"},
		{"export without a key", nil, []string{"audit", "export", "-data", data}, 1, "no signing key: set COUNTERSIGN_AUDIT_KEY"},
		{"export with a malformed key", map[string]string{"COUNTERSIGN_AUDIT_KEY": bad}, []string{"audit", "export", "-data", data}, 1, "malformed key: 16 bytes"},
		{"no journal", nil, []string{"audit", "verify", "-data", t.TempDir()}, 1, "no journal in"},
		{"a bad public key", nil, []string{"audit", "verify", "-pub", "short", "x.jsonl"}, 1, "a public key is base64 of 32 bytes"},
		{"keygen with an argument", nil, []string{"audit", "keygen", "x"}, 2, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		r := runMain(t, "", tt.env, tt.args...)
		if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: exit %d\n%s%s; want %d and %q", tt.name, r.code, r.stdout, r.stderr, tt.code, tt.want)
		}
		if strings.Contains(r.stdout+r.stderr, bad) {
			t.Errorf("%s: the key was printed", tt.name)
		}
	}
}

func TestAuditKeygen(t *testing.T) {
	r := runMain(t, "", nil, "audit", "keygen")
	if r.code != 0 {
		t.Fatalf("keygen: exit %d\n%s", r.code, r.stderr)
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.stdout))
	if err != nil || len(k) != 32 {
		t.Fatalf("keygen printed %q; want base64 of a 32-byte seed", r.stdout)
	}
	pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(k).Public().(ed25519.PublicKey))
	if !strings.Contains(r.stderr, pub) || strings.Contains(r.stderr, strings.TrimSpace(r.stdout)) {
		t.Errorf("keygen's stderr %q; want the public key alone", r.stderr)
	}
}

// A journal rewritten whole, every hash recomputed so that it verifies in
// place, is caught by verify -against a signed export kept elsewhere; the
// untouched journal, and one that went on after the export, pass.
func TestAJournalRewrittenWholeIsCaughtAgainstAKeptExport(t *testing.T) {
	data := auditedData(t)
	seed := strings.Repeat("k", 32)
	env := map[string]string{"COUNTERSIGN_AUDIT_KEY": base64.StdEncoding.EncodeToString([]byte(seed))}
	pub := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed([]byte(seed)).Public().(ed25519.PublicKey))
	kept := filepath.Join(t.TempDir(), "kept.jsonl")
	if r := runMain(t, "", env, "audit", "export", "-data", data, "-o", kept); r.code != exitOK {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runMain(t, "", nil, "audit", "verify", "-data", data, "-against", kept, "-pub", pub); r.code != exitOK || !strings.Contains(r.stdout, "ok: the journal's chain extends") {
		t.Errorf("verify -against of the untouched journal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	db, err := sql.Open("sqlite3", filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT seq, at, kind, operation_id, ref, body, prev_hash, hash FROM audit ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	var recs []audit.Record
	for rows.Next() {
		var r audit.Record
		var op, ref sql.NullString
		var body string
		if err := rows.Scan(&r.Seq, &r.At, &r.Kind, &op, &ref, &body, &r.PrevHash, &r.Hash); err != nil {
			t.Fatal(err)
		}
		r.Operation, r.Ref, r.Body = op.String, ref.String, json.RawMessage(body)
		recs = append(recs, r)
	}
	rows.Close()
	if _, err := db.Exec("DROP TRIGGER audit_no_update"); err != nil { // as whoever holds the file may
		t.Fatal(err)
	}
	prev := recs[0].PrevHash
	for i := range recs { // the first record a millisecond later, and every hash after it recomputed
		if i == 0 {
			recs[i].At++
		}
		recs[i].PrevHash = prev
		recs[i].Hash = recs[i].Sum()
		prev = recs[i].Hash
		if _, err := db.Exec("UPDATE audit SET at = ?, prev_hash = ?, hash = ? WHERE seq = ?", recs[i].At, recs[i].PrevHash, recs[i].Hash, recs[i].Seq); err != nil {
			t.Fatal(err)
		}
	}
	if r := runMain(t, "", nil, "audit", "verify", "-data", data); r.code != exitOK {
		t.Fatalf("the rewrite should verify in place (else this test shows nothing): exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"-against", kept}, {"-against", kept, "-pub", pub}} {
		r := runMain(t, "", nil, append([]string{"audit", "verify", "-data", data}, args...)...)
		if r.code != exitError || !strings.Contains(r.stdout, "bad: against "+kept+": line 1: record 1 differs in the journal") {
			t.Errorf("verify %v of the rewritten journal: exit %d\n%s%s; want record 1 named", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestAnAuditExportOfPasskeyApprovalsVerifiesOffline: a journal whose send
// was approved with a passkey exports its receipt and the approver's public
// key, and `audit verify -pub` checks the receipt with the export alone; an
// export whose receipt record was forged (another payload hash, the chain
// and the export's signature made again, as a forger who holds the server
// and its export key can) is named with its record and why.
func TestAnAuditExportOfPasskeyApprovalsVerifiesOffline(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	j, err := journal.Open(ctx, filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alice := passkeytest.New(42)
	if err := j.NewPasskeyLink(ctx, 42, "link", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishPasskeyLink(ctx, "link", alice.Credential()); err != nil {
		t.Fatal(err)
	}
	task, _ := j.CreateTask(ctx, journal.Task{Requester: 7, Policy: p})
	op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
		Payload: action.Payload{Action: "send_message", Target: "222", Text: "payload A"}}, "prepared")
	if err != nil {
		t.Fatal(err)
	}
	a := j.NewApprovalOf(op, 7, time.Hour, 1, policy.FactorPasskey)
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
		if err := j.Move(ctx, op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	r := alice.Receipt(a.ID, a.PayloadSHA256)
	if _, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: &r}); err != nil {
		t.Fatal(err)
	}
	j.Close()

	seed := strings.Repeat("k", 32)
	env := map[string]string{"COUNTERSIGN_AUDIT_KEY": base64.StdEncoding.EncodeToString([]byte(seed))}
	server := ed25519.NewKeyFromSeed([]byte(seed))
	pub := base64.StdEncoding.EncodeToString(server.Public().(ed25519.PublicKey))
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	if r := runMain(t, "", env, "audit", "export", "-data", data, "-o", file); r.code != 0 {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	fp := alice.Credential().Key().Fingerprint()
	if r := runMain(t, "", nil, "audit", "verify", "-pub", pub, file); r.code != 0 ||
		!strings.Contains(r.stdout, "; 1 passkey receipts verified with the export's 1 public keys alone") || !strings.Contains(r.stdout, "passkey of 42 for "+passkeytest.RPID) || !strings.Contains(r.stdout, fp) {
		t.Fatalf("verify -pub: exit %d\n%s%s; want 1 receipt verified and alice's key's fingerprint", r.code, r.stdout, r.stderr)
	}

	// The forger's export: the receipt claims payload B, everything after it
	// chained and signed again with the server's key.
	raw, _ := os.ReadFile(file)
	var out bytes.Buffer
	w := audit.NewWriter(&out, server)
	prev := audit.ZeroHash
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		var rec audit.Record
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Kind == "" {
			var keys audit.Passkeys
			if json.Unmarshal([]byte(line), &keys) == nil && keys.Passkeys != nil {
				w.Keys(keys.Passkeys)
			}
			continue
		}
		if rec.Kind == audit.Receipt {
			rec.Body = []byte(strings.Replace(string(rec.Body), a.PayloadSHA256, strings.Repeat("b", 64), 1))
		}
		rec.PrevHash = prev
		rec.Hash = rec.Sum()
		prev = rec.Hash
		w.Add(rec)
	}
	w.Close()
	os.WriteFile(file, out.Bytes(), 0o600)
	if r := runMain(t, "", nil, "audit", "verify", "-pub", pub, file); r.code != 1 ||
		!regexp.MustCompile(`bad: .*: line \d+: record \d+ \(receipt of `+op.ID+`\): the receipt claims payload bbbbbbbbbbbb, and approval `+a.ID+` was asked for payload `+a.PayloadSHA256[:12]).MatchString(r.stdout) {
		t.Errorf("verify -pub of a forged receipt: exit %d\n%s%s; want 1 naming the receipt's record and why", r.code, r.stdout, r.stderr)
	}
}
