package tools

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// A folder under a root swapped for a link out of it between the check of a
// path and its open is not followed: the open is confined to the root, not
// made by the path again. (The swap is made at that moment by the one hook
// the code has for it.)
func TestAFolderSwappedForALinkAfterTheCheckIsNotFollowed(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for dir, content := range map[string]string{sub: "the approved notes", outside: "the bot's private key"} {
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	beforeLocalOpen = func(string) {
		if err := os.Rename(sub, filepath.Join(root, "was-sub")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, sub); err != nil {
			t.Error(err)
		}
	}
	defer func() { beforeLocalOpen = nil }()

	m := Media{Policy: policy.Files{Roots: []string{root}}}
	r, _, _, err := m.local(args{tool: "commit_send_document"}, filepath.Join(sub, "notes.txt"))
	if err == nil {
		b, _ := io.ReadAll(r)
		r.Close()
		t.Fatalf("read %q through the swapped folder, want a refusal", b)
	}
	var ae *ArgsError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "could not be opened") {
		t.Errorf("local = %v, want a refusal", err)
	}
}
