package verifier_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/verifier"
)

// Two texts have the same SeenKey exactly when the duplicate check finds them
// the same (strings.EqualFold of what their recipients read, and the same
// files in the same order): a store that hands the check only a key's
// operations misses no duplicate, and hands it few others.
func TestSeenKeyIsTheSameExactlyForTheSame(t *testing.T) {
	type text struct {
		text, mode string
		files      []string
	}
	tests := []struct {
		name string
		a, b text
	}{
		{"case and white space", text{"Hello, readers.", "", nil}, text{"  hello,\n READERS. ", "", nil}},
		{"markup that shows nothing", text{"Tom &amp; <b></b>Jerry", "HTML", nil}, text{"tom & jerry", "", nil}},
		{"a zero-width space", text{"Hello\u200b world", "", nil}, text{"Hello world", "", nil}},
		{"another Unicode form", text{"Cafe\u0301", "", nil}, text{"Café", "", nil}},
		{"the Kelvin sign folds with k", text{"\u212Aelvin", "", nil}, text{"kelvin", "", nil}},
		{"the long s folds with S", text{"\u017Fun", "", nil}, text{"SUN", "", nil}},
		{"a title-case letter folds with its pair", text{"\u01C5", "", nil}, text{"\u01C6", "", nil}},
		{"bytes that are no text", text{"a\xff", "", nil}, text{"a\xfe", "", nil}},
		{"another text", text{"Hello, readers.", "", nil}, text{"Hello, readers!", "", nil}},
		{"markup that shows", text{"<b>x</b>", "", nil}, text{"x", "", nil}},
		{"the same files", text{"chart", "", []string{"aa", "bb"}}, text{"Chart", "", []string{"aa", "bb"}}},
		{"files in another order", text{"chart", "", []string{"aa", "bb"}}, text{"chart", "", []string{"bb", "aa"}}},
		{"a file more", text{"chart", "", []string{"aa"}}, text{"chart", "", []string{"aa", "bb"}}},
		{"a text that is a file's sum", text{"aa", "", nil}, text{"", "", []string{"aa"}}},
		{"no text and no files", text{"", "", nil}, text{" ", "", nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same := strings.EqualFold(verifier.Seen(tt.a.text, tt.a.mode), verifier.Seen(tt.b.text, tt.b.mode)) &&
				strings.Join(tt.a.files, " ") == strings.Join(tt.b.files, " ")
			keyed := verifier.SeenKey(tt.a.text, tt.a.mode, tt.a.files) == verifier.SeenKey(tt.b.text, tt.b.mode, tt.b.files)
			if same != keyed {
				t.Errorf("the check finds them the same: %v; their keys are equal: %v", same, keyed)
			}
		})
	}
}

// FuzzSeenKey: for any two texts, in any parse mode, the keys are equal
// exactly when the check finds the texts the same.
func FuzzSeenKey(f *testing.F) {
	f.Add("Hello, readers.", "  hello,\n READERS. ", "", "")
	f.Add("Tom &amp; <b></b>Jerry", "tom & jerry", "HTML", "")
	f.Add("*bold* _it_", "bold it", "MarkdownV2", "")
	f.Add("\u017Fun", "SUN", "", "HTML")
	f.Fuzz(func(t *testing.T, a, b, modeA, modeB string) {
		same := strings.EqualFold(verifier.Seen(a, modeA), verifier.Seen(b, modeB))
		if keyed := verifier.SeenKey(a, modeA, nil) == verifier.SeenKey(b, modeB, nil); same != keyed {
			t.Errorf("%q (%s) and %q (%s): the check finds them the same: %v; their keys are equal: %v", a, modeA, b, modeB, same, keyed)
		}
	})
}
