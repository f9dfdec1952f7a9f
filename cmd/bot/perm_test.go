//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

// setUmask sets the process's umask for the test and restores it after. The umask is
// process-wide: no test in this package runs in parallel.
func setUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// openFolder is an existing folder with mode perm, as a person may pass to -data.
func openFolder(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

func permOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// In an existing -data folder open to others, what the bot writes is still private:
// the journal 0600, the vault's folders 0700, the notes 0600.
func TestDataFilesArePrivate(t *testing.T) {
	setUmask(t, 0o022)
	data := openFolder(t, 0o755)
	id := unknownIn(t, data)
	v, err := vault.Open(filepath.Join(data, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	_, note, err := v.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{filepath.Join(data, "journal.db"): 0o600, note: 0o600}
	for dir := filepath.Dir(note); dir != data; dir = filepath.Dir(dir) {
		want[dir] = 0o700
	}
	for path, perm := range want {
		if got := permOf(t, path); got != perm {
			t.Errorf("%s: mode %04o, want %04o", path, got, perm)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's writes and the test's reads.
type syncBuffer = syncbuf.Buffer

// "countersign console" and "countersign run" warn at start when the data or vault folder is open to
// other users, naming the folder and the chmod that closes it; a private one is quiet.
func TestStartWarnsOfAnOpenDataFolder(t *testing.T) {
	const warning = "open to other users"
	t.Run("console, data folder 0755", func(t *testing.T) {
		data := openFolder(t, 0o755)
		r := runMain(t, "", nil, "console", "-data", data, "-policies", "../../policies.yaml")
		if r.code != 0 || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stderr, "chmod 700 "+data) {
			t.Errorf("exit %d, stderr:\n%s\nwant a warning naming %s and its chmod", r.code, r.stderr, data)
		}
	})
	t.Run("console, vault folder 0770", func(t *testing.T) {
		data, vaultDir := openFolder(t, 0o700), openFolder(t, 0o770)
		r := runMain(t, "", nil, "console", "-data", data, "-vault", vaultDir, "-policies", "../../policies.yaml")
		if r.code != 0 || !strings.Contains(r.stderr, "chmod 700 "+vaultDir) || strings.Contains(r.stderr, "chmod 700 "+data) {
			t.Errorf("exit %d, stderr:\n%s\nwant a warning for %s only", r.code, r.stderr, vaultDir)
		}
	})
	t.Run("console, private folders", func(t *testing.T) {
		r := runMain(t, "", nil, "console", "-data", openFolder(t, 0o700), "-policies", "../../policies.yaml")
		if r.code != 0 || strings.Contains(r.stderr, warning) {
			t.Errorf("exit %d, stderr:\n%s\nwant no warning", r.code, r.stderr)
		}
	})
	t.Run("run, data folder 0755", func(t *testing.T) {
		srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
		data := openFolder(t, 0o755)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stderr syncBuffer
		env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL()}
		done := make(chan int, 1)
		go func() {
			done <- Main(ctx, []string{"run", "-data", data, "-policies", "../../policies.yaml", "-poll-timeout", "1s"},
				Env{Stdin: strings.NewReader(""), Stdout: &stderr, Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
		}()
		if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return s.Polling() }); err != nil {
			t.Fatalf("the bot did not start polling: %v\n%s", err, stderr.String())
		}
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("countersign run did not stop after its context ended\n%s", stderr.String())
		}
		if out := stderr.String(); !strings.Contains(out, warning) || !strings.Contains(out, "chmod 700 "+data) {
			t.Errorf("log:\n%s\nwant a warning naming %s and its chmod", out, data)
		}
	})
}

// ops list, a command that only reads, reads a journal its user may read but
// not write, in a folder it cannot write (another user's journal, a copy on
// read-only media): it opens it as a read-only snapshot rather than failing
// on the write-ahead log it cannot make.
func TestOpsListReadsAJournalItCannotWrite(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv, to run as another user (CI has both)")
	}
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if r := runMain(t, "/send 222 read me\ny\n", map[string]string{"BOT_OPERATORS": "1"}, "console", "-data", data, "-policies", "../../policies.yaml"); r.code != exitOK {
		t.Fatalf("console: exit %d %s", r.code, r.stderr)
	}
	// The journal readable by all and writable by none but root; the test
	// binary where another user may run it.
	bin := filepath.Join(root, "countersign.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{filepath.Dir(root): 0o755, root: 0o755, data: 0o555} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(data, 0o755) })
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(data, "journal.db"), 0o444); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^$", "--", "ops", "list", "-data", data)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `committed send_message to 222 "read me"`) {
		t.Errorf("ops list as another user: %v\n%s", err, out)
	}
}
