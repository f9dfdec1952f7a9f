package verifier_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// Telegram's limits on files are checks, before any card: a photo over 10 MB,
// a document over 50 MB, an empty file, an album of more than ten, a caption
// over 1024 characters.
func TestFilesAreCheckedAgainstTelegramsLimits(t *testing.T) {
	photo := func(size int64) verifier.File {
		return verifier.File{Kind: "photo", Name: "a.png", Size: size, SHA256: "aa"}
	}
	doc := func(size int64) verifier.File {
		return verifier.File{Kind: "document", Name: "r.pdf", Size: size, SHA256: "bb"}
	}
	tests := []struct {
		name    string
		in      verifier.Input
		reasons []string
	}{
		{"a photo at the limit", verifier.Input{Files: []verifier.File{photo(10 << 20)}, NoText: true}, nil},
		{"a photo over it", verifier.Input{Files: []verifier.File{photo(10<<20 + 1)}, NoText: true}, []string{"Telegram takes at most 10 MB for a photo"}},
		{"a document of 11 MB", verifier.Input{Files: []verifier.File{doc(11 << 20)}, NoText: true}, nil},
		{"a document over 50 MB", verifier.Input{Files: []verifier.File{doc(50<<20 + 1)}, NoText: true}, []string{"at most 50 MB for a document"}},
		{"an empty file", verifier.Input{Files: []verifier.File{doc(0)}, NoText: true}, []string{`document "r.pdf" is empty`}},
		{"eleven items", verifier.Input{Files: []verifier.File{photo(1), photo(1), photo(1), photo(1), photo(1), photo(1), photo(1), photo(1), photo(1), photo(1), photo(1)}, NoText: true}, []string{"an album holds at most 10"}},
		{"a caption of 1024", verifier.Input{Files: []verifier.File{photo(1)}, Caption: true, Text: strings.Repeat("ab ", 341) + "a"}, nil},
		{"a caption of 1025", verifier.Input{Files: []verifier.File{photo(1)}, Caption: true, Text: strings.Repeat("ab ", 341) + "ab"}, []string{"caption is 1025 characters long, Telegram takes at most 1024"}},
	}
	c := verifier.New(policy.Verify{}, nil, clock)
	for _, tt := range tests {
		tt.in.Target = "222"
		v := c.Check(t.Context(), tt.in)
		if len(tt.reasons) == 0 && v.Decision != verifier.Pass {
			t.Errorf("%s: %s, want pass", tt.name, v.Summary())
		}
		for _, want := range tt.reasons {
			if v.Decision != verifier.Repair || !strings.Contains(v.Summary(), want) {
				t.Errorf("%s: %s, want a repair saying %q", tt.name, v.Summary(), want)
			}
		}
	}
}

// A payload with files is a duplicate of one with the same files and caption
// to the same chat, and of nothing else: a caption-less photo sent twice is
// stopped, another photo with the same caption is not.
func TestDuplicatesCompareFilesByContent(t *testing.T) {
	h := history{
		{"222", verifier.Sent{OperationID: "op-photo", Files: []string{"aa"}, State: "committed", At: noon.Add(-time.Hour)}},
		{"222", verifier.Sent{OperationID: "op-text", Text: "chart", State: "committed", At: noon.Add(-time.Hour)}},
	}
	c := verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock)
	photo := func(sum, caption string) verifier.Input {
		return verifier.Input{Target: "222", Files: []verifier.File{{Kind: "photo", Name: "a.png", Size: 10, SHA256: sum}}, Caption: true, Text: caption, NoText: caption == ""}
	}
	if v := c.Check(t.Context(), photo("aa", "")); v.Decision != verifier.Stop || !strings.Contains(v.Summary(), "same files and caption as operation op-photo") {
		t.Errorf("the same photo again: %s, want a stop naming op-photo", v.Summary())
	}
	if v := c.Check(t.Context(), photo("bb", "")); v.Decision != verifier.Pass {
		t.Errorf("another photo: %s, want pass", v.Summary())
	}
	if v := c.Check(t.Context(), photo("bb", "chart")); v.Decision != verifier.Pass {
		t.Errorf("a photo captioned as an earlier text: %s, want pass", v.Summary())
	}
}
