package botbuild_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/botbuild"
)

func TestInstallCopiesTheBinaryAsAnExecutable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "linked")
	want := bytes.Repeat([]byte("\x7fELF binary "), 100_000)
	if err := os.WriteFile(src, want, 0o700); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(dir, "run")
	if err := os.Mkdir(into, 0o700); err != nil {
		t.Fatal(err)
	}
	bin, err := botbuild.Install(src, into)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bin, filepath.Join(into, "countersign"); got != want {
		t.Errorf("installed at %s, want %s", got, want)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy differs: %d bytes, want %d", len(got), len(want))
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("mode %v: not executable", fi.Mode())
	}
}

func TestInstallOfAMissingBinaryFails(t *testing.T) {
	_, err := botbuild.Install(filepath.Join(t.TempDir(), "none"), t.TempDir())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Install of a missing file: %v, want fs.ErrNotExist", err)
	}
}
