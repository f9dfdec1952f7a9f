package tools_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// A folder beside a root whose name starts with the root's (root /a/files,
// path /a/files2/x) is outside it.
func TestASiblingFolderNamedLikeTheRootIsOutsideIt(t *testing.T) {
	base := t.TempDir()
	root, sibling := filepath.Join(base, "files"), filepath.Join(base, "files2")
	for _, dir := range []string{root, sibling} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, document := fileTools(t, policy.Files{Roots: []string{root}})
	if _, err := prepareFile(t, document, filepath.Join(root, "x.txt"), ""); err != nil {
		t.Fatalf("a file under the root: %v", err)
	}
	_, err := prepareFile(t, document, filepath.Join(sibling, "x.txt"), "")
	var ae *tools.ArgsError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "outside the folders open") {
		t.Errorf("a file in %s: %v, want it outside the root %s", sibling, err, root)
	}
}

// A FIFO under a root is refused at once, not waited on until a writer comes
// (or the prepare's context ends).
func TestAFIFOUnderARootIsRefusedWithoutBlocking(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "pipe.pdf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	_, document := fileTools(t, policy.Files{Roots: []string{root}})
	done := make(chan error, 1)
	go func() {
		_, err := prepareFile(t, document, fifo, "")
		done <- err
	}()
	select {
	case err := <-done:
		var ae *tools.ArgsError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "not a regular file") {
			t.Errorf("a FIFO: %v, want a refusal as not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		// Let the blocked open go: a writer opens and closes the FIFO.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("the prepare waited on a FIFO with no writer")
	}
}
