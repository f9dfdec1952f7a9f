package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/telegram/telegramtest"

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

// notRestored are the data folder's files a restore does without, each with why.
// Every other file a bot leaves in its data folder must be in the backup.
var notRestored = map[string]string{
	"journal.db-wal":          "the journal's write-ahead log: journal.Backup copies the journal consistently with it",
	"journal.db-shm":          "the journal's shared memory index, rebuilt at each open",
	pairing.CodesFile:         "pending pairing codes, valid minutes and given again on /start",
	"journal.db-journal":      "SQLite's rollback journal, only while a write is under way",
	"journal.db.*.owner":      "a transport owner's lock, taken again by the bot that starts",
	"vault/" + vault.LockName: "the vault writers' lock, taken again by the next writer",
}

// A backup of a running, paired bot holds every file a bot leaves in its data
// folder (but those notRestored names), and a bot restored from it serves its
// paired operator: pairing stays closed to whoever sends /start first.
func TestABackupHoldsEveryFileARestoreNeeds(t *testing.T) {
	t.Parallel()
	const owner = 111
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, pol := freshBot(t)
	b := startRun(t, srv, data, pol, nil)
	code := b.code(owner)
	if r := runMain(t, "", nil, "pair", "-data", data, code); r.code != exitOK {
		t.Fatalf("countersign pair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.said(owner, "Paired: you are this bot's operator and approver now")
	srv.PushMessage(owner, owner, "/send 222 before the backup")
	card, data0 := cardFor(t, srv, owner, "before the backup")
	srv.PushCallbackQuery(owner, owner, card.MessageID, data0)
	b.said(222, "before the backup")
	to := filepath.Join(t.TempDir(), "backup")
	if r := runMain(t, "", nil, "backup", "-data", data, "-to", to); r.code != exitOK {
		t.Fatalf("backup = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	b.stop()

	err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		for pattern := range notRestored {
			if ok, _ := filepath.Match(pattern, rel); ok {
				return nil
			}
		}
		if _, err := os.Stat(filepath.Join(to, rel)); err != nil {
			t.Errorf("the bot left %s in its data folder and the backup lacks it: %v", rel, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	b = startRun(t, srv, to, pol, nil)
	if log := b.log.String(); strings.Contains(log, "pairing open") || !strings.Contains(log, "operators=1 approvers=1") {
		t.Errorf("a bot restored from the backup should serve its paired operator, pairing closed:\n%s", log)
	}
	srv.PushMessage(444, 444, "/start")
	if m := b.said(444, "Your user id is 444"); strings.Contains(m.Text, "countersign pair") {
		t.Errorf("a newcomer to the restored bot was offered a code: %q", m.Text)
	}
}
