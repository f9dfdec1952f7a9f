package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mutant of mutation/mutants still applies to the tree as it is: a
// change that moves or rewrites the code a mutant breaks fails here, in the
// ordinary test run, and the mutant is brought along in the same change. A
// snippet that moved to another file applies, and is named, so that the
// mutant's "# file:" can follow it.
func TestEveryMutantStillApplies(t *testing.T) {
	paths, err := filepath.Glob("../../mutation/mutants/*/*.mutant")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no mutants under mutation/mutants (%v)", err)
	}
	for _, p := range paths {
		m, err := Read(p)
		if err != nil {
			t.Error(err)
			continue
		}
		moved, err := Check("../..", m)
		if err != nil {
			t.Errorf("%s: %v", strings.TrimPrefix(p, "../../"), err)
		}
		for _, mv := range moved {
			t.Logf("%s: moved: %s (update its # file:)", strings.TrimPrefix(p, "../../"), mv)
		}
		if m.Promise == "" {
			t.Errorf("%s: no # promise:", p)
		}
	}
}

// A snippet is found by its content: where its file holds it, at a line's
// start; in another Go file when it moved there; nowhere, twice, or only
// inside a longer line makes the mutant stale.
func TestApplyFindsTheSnippetByContent(t *testing.T) {
	mutant := "# promise: p\n# tests: ./a\n# file: a/a.go\n<<<<<<< old\n\treturn x\n=======\n\treturn y\n>>>>>>> new\n"
	tests := []struct {
		name    string
		files   map[string]string
		changed string // the file changed, "" when stale
		want    string // its content after
	}{
		{"in its file", map[string]string{"a/a.go": "func f() {\n\treturn x\n}\n"}, "a/a.go", "func f() {\n\treturn y\n}\n"},
		{"moved to another file", map[string]string{"a/a.go": "package a\n", "b/b.go": "func g() {\n\treturn x\n}\n"}, "b/b.go", "func g() {\n\treturn y\n}\n"},
		{"only inside a longer line", map[string]string{"a/a.go": "\t\treturn x\n\treturn xs\n"}, "", ""},
		{"twice in its file", map[string]string{"a/a.go": "\treturn x\n\treturn x\n"}, "", ""},
		{"in two other files", map[string]string{"a/a.go": "", "b/b.go": "\treturn x\n", "c/c.go": "\treturn x\n"}, "", ""},
		{"nowhere", map[string]string{"a/a.go": "\treturn z\n"}, "", ""},
	}
	m, err := Parse(mutant)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for f, c := range tt.files {
				os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
				os.WriteFile(filepath.Join(root, f), []byte(c), 0o644)
			}
			changed, _, err := Apply(root, m)
			if tt.changed == "" {
				if !errors.Is(err, ErrStale) {
					t.Errorf("Apply = %v, %v; want stale", changed, err)
				}
				return
			}
			got, _ := os.ReadFile(filepath.Join(root, tt.changed))
			if err != nil || len(changed) != 1 || changed[0] != tt.changed || string(got) != tt.want {
				t.Errorf("Apply = %v, %v; %s = %q, want %s = %q", changed, err, tt.changed, got, tt.changed, tt.want)
			}
		})
	}
}

// A mutant file reads back as it was written, and one that is malformed says
// where.
func TestParse(t *testing.T) {
	m := Mutant{Promise: "p", Tests: "./x", Equivalent: "e", Edits: []Edit{
		{File: "a.go", Old: "a\n\nb\n", New: ""}, {File: "a.go", Old: "c\n", New: "d\n"}, {File: "b.go", Old: "e\n", New: "f\ng\n"}}}
	got, err := Parse(Format(m))
	if err != nil || Format(got) != Format(m) {
		t.Errorf("Parse(Format(m)) = %+v, %v; want %+v", got, err, m)
	}
	for _, bad := range []string{
		"# tests: ./x\n", // no block
		"# tests: ./x\n<<<<<<< old\na\n=======\nb\n>>>>>>> new\n",                      // no file
		"# tests: ./x\n# file: a.go\n<<<<<<< old\na\n=======\nb\n",                     // no end
		"# file: a.go\n<<<<<<< old\na\n=======\nb\n>>>>>>> new\n",                      // no tests
		"# tests: ./x\n# file: a.go\n<<<<<<< old\n=======\nb\n>>>>>>> new\n",           // empty old
		"# tests: ./x\n# file: a.go\nstray\n<<<<<<< old\na\n=======\nb\n>>>>>>> new\n", // outside
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
