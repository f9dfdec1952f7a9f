package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestPutStoresBytesUnderTheirSum(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sum, n, err := s.Put(ctx, strings.NewReader("photo A"), 100)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256([]byte("photo A"))
	if sum != hex.EncodeToString(want[:]) || n != 7 {
		t.Fatalf("Put = %s, %d; want the content's sum and 7 bytes", sum, n)
	}
	again, _, err := s.Put(ctx, strings.NewReader("photo A"), 100)
	if err != nil || again != sum {
		t.Fatalf("the same bytes again: %s, %v", again, err)
	}
	b, err := s.Open(ctx, sum)
	if err != nil || string(b) != "photo A" {
		t.Fatalf("Open = %q, %v", b, err)
	}
}

func TestPutRefusesMoreThanItsLimit(t *testing.T) {
	s, _ := Open(t.TempDir())
	_, _, err := s.Put(context.Background(), strings.NewReader("12345"), 4)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5 bytes with a limit of 4: %v, want ErrTooLarge", err)
	}
	if _, _, err := s.Put(context.Background(), strings.NewReader("1234"), 4); err != nil {
		t.Fatalf("4 bytes with a limit of 4: %v", err)
	}
}

// A stored file altered on disk after its approval is never sent as the
// approved one.
func TestOpenRefusesAFileChangedOnDisk(t *testing.T) {
	ctx := context.Background()
	s, _ := Open(t.TempDir())
	sum, _, _ := s.Put(ctx, strings.NewReader("photo A"), 100)
	if err := os.WriteFile(s.path(sum), []byte("photo B"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, sum); !errors.Is(err, ErrChanged) {
		t.Fatalf("Open of a changed file: %v, want ErrChanged", err)
	}
	for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("g", 64), strings.Repeat("a", 64)} {
		if _, err := s.Open(ctx, bad); !errors.Is(err, ErrMissing) {
			t.Errorf("Open(%q): %v, want ErrMissing", bad, err)
		}
	}
}

// Put syncs the file's bytes to disk before it renames the file into place:
// after a crash a name never stands over bytes the disk did not keep.
func TestPutSyncsTheFileBeforeItsRename(t *testing.T) {
	var steps []string
	sync0, rename0 := syncFile, rename
	defer func() { syncFile, rename = sync0, rename0 }()
	syncFile = func(f *os.File) error {
		steps = append(steps, "sync "+filepath.Base(f.Name()))
		return sync0(f)
	}
	rename = func(from, to string) error {
		steps = append(steps, "rename "+filepath.Base(from))
		return rename0(from, to)
	}
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Put(context.Background(), strings.NewReader("photo A"), 100); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || !strings.HasPrefix(steps[0], "sync .put-") || steps[1] != "rename "+strings.TrimPrefix(steps[0], "sync ") {
		t.Fatalf("steps = %q, want the temporary file synced, then renamed", steps)
	}
}

// The store's folders are 0700 whatever the umask: a wide one (0) does not
// open them to others, a narrow one (0277) does not leave them unwritable.
func TestTheStoresFoldersAre0700WhateverTheUmask(t *testing.T) {
	for _, umask := range []int{0, 0o022, 0o277} {
		t.Run(fmt.Sprintf("umask %04o", umask), func(t *testing.T) {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			dir := filepath.Join(t.TempDir(), "files")
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			sum, _, err := s.Put(context.Background(), strings.NewReader("photo A"), 100)
			if err != nil {
				t.Fatalf("Put under umask %04o: %v", umask, err)
			}
			for _, d := range []string{dir, filepath.Dir(s.path(sum))} {
				st, err := os.Stat(d)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Mode().Perm(); got != 0o700 {
					t.Errorf("%s: mode %04o, want 0700", d, got)
				}
			}
		})
	}
}
