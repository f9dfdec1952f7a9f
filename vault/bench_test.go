package vault_test

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/vault"
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if fixture.dir != "" {
		os.RemoveAll(fixture.dir)
	}
	os.Exit(code)
}

func BenchmarkWrite(b *testing.B) {
	v, err := vault.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := v.Write(newEnvelope(fmt.Sprintf("op-%d", i), t0)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteFileBaseline writes the same bytes with a plain os.WriteFile: no
// lookup, hygiene, render, temp file, fsync or rename.
func BenchmarkWriteFileBaseline(b *testing.B) {
	dir := b.TempDir()
	data, err := newEnvelope("op-0", t0).Render()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("op-%d.md", i)), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

const fixtureSize = 100_000

// fixture is a vault of fixtureSize notes over two years, one every ~10.5 minutes:
// every third one unresolved, the others resolved, each expiring a week after it was
// created. Built once per test binary; GC benchmarks put back what they remove.
var fixture struct {
	once  sync.Once
	dir   string
	v     *vault.Vault
	now   time.Time // gcNow: about half the resolved notes have expired
	index map[string]int
	err   error
}

func fixtureEnvelope(i int) envelope.Envelope {
	e := newEnvelope(fmt.Sprintf("op-%06d", i), t0.Add(time.Duration(i)*630*time.Second))
	e.Target = []string{"222", "-1001234567890", "@news"}[i%3]
	if i%3 != 0 {
		e.Resolve(i%2 == 0, "@alice", e.Created.Add(time.Minute))
	}
	return e
}

// putNote writes note i directly (no fsync) where the vault would put it.
func putNote(v *vault.Vault, i int) (string, error) {
	e := fixtureEnvelope(i)
	data, err := e.Render()
	if err != nil {
		return "", err
	}
	path := v.AbsPath(e.OperationID, e.Created)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o600)
}

func loadFixture(b *testing.B) *vault.Vault {
	b.Helper()
	if testing.Short() {
		b.Skip("100k-note fixture skipped in -short mode")
	}
	fixture.once.Do(func() {
		fixture.dir, fixture.err = os.MkdirTemp("", "vault-bench-")
		if fixture.err != nil {
			return
		}
		fixture.v, fixture.err = vault.Open(fixture.dir)
		fixture.index = make(map[string]int, fixtureSize)
		for i := 0; i < fixtureSize && fixture.err == nil; i++ {
			var path string
			path, fixture.err = putNote(fixture.v, i)
			fixture.index[path] = i
		}
		fixture.now = fixtureEnvelope(fixtureSize / 2).Created
	})
	if fixture.err != nil {
		b.Fatalf("fixture: %v", fixture.err)
	}
	return fixture.v
}

// BenchmarkReadAll100k is the baseline for List and GC: walk the same 100,000 notes
// and read every file, parsing nothing.
func BenchmarkReadAll100k(b *testing.B) {
	loadFixture(b)
	for b.Loop() {
		n := 0
		err := filepath.WalkDir(fixture.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(path)
			n++
			return err
		})
		if err != nil || n < fixtureSize {
			b.Fatalf("read %d notes: %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fixtureSize), "ns/note")
}

func BenchmarkList100k(b *testing.B) {
	v := loadFixture(b)
	filters := []struct {
		name    string
		f       vault.Filter
		noIndex bool // remove the index before each List: the first List after an upgrade or a damaged index
	}{
		{"all", vault.Filter{}, false},
		{"unresolved", vault.Filter{Unresolved: true}, false},
		{"unresolved-no-index", vault.Filter{Unresolved: true}, true},
		{"all-no-index", vault.Filter{}, true},
	}
	for _, tt := range filters {
		b.Run(tt.name, func(b *testing.B) {
			v.List(tt.f) // the index as this List leaves it
			for b.Loop() {
				if tt.noIndex {
					b.StopTimer()
					if err := os.Remove(filepath.Join(v.Dir(), vault.IndexName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				notes, broken, err := v.List(tt.f)
				if err != nil || len(broken) != 0 || len(notes) == 0 {
					b.Fatalf("List: %d notes, %d broken, %v", len(notes), len(broken), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fixtureSize), "ns/note")
		})
	}
}

func BenchmarkGC100k(b *testing.B) {
	v := loadFixture(b)
	var removed int
	for b.Loop() {
		gone, err := v.GC(fixture.now)
		if err != nil || len(gone) == 0 {
			b.Fatalf("GC: removed %d, %v", len(gone), err)
		}
		removed = len(gone)
		b.StopTimer()
		for _, path := range gone {
			if _, err := putNote(v, fixture.index[path]); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(removed), "removed/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*fixtureSize), "ns/note")
}
