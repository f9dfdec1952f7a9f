package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/vault"
)

// countersign backup copies the journal, consistently, with the vault's notes beside
// it: a bot started on the copy finds the unknown outcome and its envelope.
// It never writes into a folder that exists, and says how to back up a
// journal on PostgreSQL.
func TestBackupRestoresTheUnknownAndItsEnvelope(t *testing.T) {
	data := t.TempDir()
	id := unknownIn(t, data)
	to := filepath.Join(t.TempDir(), "backup")
	r := runMain(t, "", nil, "backup", "-data", data, "-to", to)
	if r.code != 0 || !strings.Contains(r.stdout, "the vault (1 note(s))") {
		t.Fatalf("backup = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	for path, mode := range map[string]os.FileMode{to: 0o700 | os.ModeDir, filepath.Join(to, "journal.db"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v, %v; want mode %v", path, fi, err, mode)
		}
	}
	ctx := context.Background()
	j, err := openJournal(ctx, Config{DataDir: to})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	op, err := j.Operation(ctx, id)
	if err != nil || op.State != journal.Unknown {
		t.Fatalf("restored operation = %+v, %v; want it unknown", op.State, err)
	}
	v, err := vault.Open(filepath.Join(to, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	if e, _, err := v.Get(id); err != nil || e.OperationID != id {
		t.Errorf("restored envelope = %+v, %v", e, err)
	}
	if rep, err := j.VerifyAudit(ctx); err != nil || rep.Fault != nil {
		t.Errorf("restored audit trail: %v, %v", rep.Fault, err)
	}
	if r := runMain(t, "", nil, "backup", "-data", data, "-to", to); r.code != exitError || !strings.Contains(r.stderr, "exists") {
		t.Errorf("a backup into an existing folder = %d, %q; want refused", r.code, r.stderr)
	}
	if r := runMain(t, "", nil, "backup", "-journal", "postgres://127.0.0.1:1/none", "-to", filepath.Join(t.TempDir(), "b")); r.code != exitError || !strings.Contains(r.stderr, "pg_dump") {
		t.Errorf("a backup of PostgreSQL = %d, %q; want pg_dump named", r.code, r.stderr)
	}
}
