package envelope_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/envelope"
)

func goldenNote(b *testing.B) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "resolved.golden"))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkParse(b *testing.B) {
	note := goldenNote(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := envelope.Parse(note); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPeek(b *testing.B) {
	note := goldenNote(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := envelope.Peek(note, "status"); !ok {
			b.Fatal("Peek: not ok")
		}
	}
}

func BenchmarkRender(b *testing.B) {
	e := resolved()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Render(); err != nil {
			b.Fatal(err)
		}
	}
}
