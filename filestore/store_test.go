package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
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
