package tools_test

import (
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/countersign/countersign/tools"
)

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func TestSplit(t *testing.T) {
	para := strings.Repeat("word ", 600) // 3000 units
	tests := []struct {
		name      string
		text      string
		wantParts int
		wantFirst string // suffix the first part ends with
	}{
		{"short text is one part", "hello", 1, "hello"},
		{"exactly the limit", strings.Repeat("a", 4096), 1, "a"},
		{"paragraph break preferred", para + "\n\n" + para + "\n" + para, 3, "\n\n"},
		{"line break before space", strings.Repeat("x", 3000) + "\n" + strings.Repeat("y ", 1000), 2, "\n"},
		{"word boundary", strings.Repeat("word ", 2000), 3, " "},
		{"one long word is cut", strings.Repeat("z", 9000), 3, "z"},
		{"astral runes count double", strings.Repeat("😀", 3000), 2, "😀"},
	}
	for _, tt := range tests {
		parts := tools.Split(tt.text, tools.MaxMessageUnits)
		if len(parts) != tt.wantParts {
			t.Errorf("%s: %d parts, want %d", tt.name, len(parts), tt.wantParts)
		}
		if strings.Join(parts, "") != tt.text {
			t.Errorf("%s: parts do not concatenate to the text", tt.name)
		}
		for i, p := range parts {
			if n := utf16Len(p); n > tools.MaxMessageUnits || n == 0 {
				t.Errorf("%s: part %d has %d units", tt.name, i, n)
			}
		}
		if !strings.HasSuffix(parts[0], tt.wantFirst) {
			t.Errorf("%s: first part ends %q, want %q", tt.name, parts[0][max(0, len(parts[0])-5):], tt.wantFirst)
		}
	}
}

func TestSplit9000Characters(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		b.WriteString("Paragraph with some words in it.\n\n")
	}
	text := b.String()[:9000]
	parts := tools.Split(text, tools.MaxMessageUnits)
	if len(parts) != 3 || strings.Join(parts, "") != text {
		t.Fatalf("9,000 characters: %d parts, want 3 that concatenate to the text", len(parts))
	}
}
