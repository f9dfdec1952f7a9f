// Command mutant applies the hand-written mutants of mutation/mutants to a
// tree, for mutation/run. A mutant names the code it breaks by content, not by
// line: a file, the exact snippet there, and what replaces it. Code that moves
// within its file, or to another file, takes its mutants along: a snippet not
// in the file it names is looked for in every other Go file of the tree, and
// applied where it is found once. A snippet found nowhere, or more than once,
// makes the mutant stale, which the run reports, and which
// TestEveryMutantStillApplies catches in the ordinary test run.
//
// A mutant file:
//
//	# promise: what the mutant breaks, and where the docs make the promise
//	# tests: the go test packages that must catch it, e.g. ./operator ./journal
//	# equivalent: why no test can tell it from the real code (only for those)
//	# file: operator/operator.go
//	<<<<<<< old
//	the exact lines, tabs and all
//	=======
//	what they become
//	>>>>>>> new
//
// with as many "# file:" and blocks as it needs. Usage:
//
//	mutant apply -root DIR FILE.mutant   # mutate DIR; print the files changed
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Mutant is one mutant file read.
type Mutant struct {
	Promise, Tests, Equivalent string
	Edits                      []Edit
}

// Edit replaces Old with New in File.
type Edit struct {
	File     string
	Old, New string
}

const (
	markOld = "<<<<<<< old"
	markSep = "======="
	markNew = ">>>>>>> new"
)

// Parse reads a mutant file's text.
func Parse(text string) (Mutant, error) {
	var m Mutant
	var file string
	var cur *Edit
	var into *[]string
	var old, new []string
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "# "):
			k, v, _ := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
			switch k {
			case "promise":
				m.Promise = v
			case "tests":
				m.Tests = v
			case "equivalent":
				m.Equivalent = v
			case "file":
				file = v
			}
		case cur == nil && line == markOld:
			if file == "" {
				return m, fmt.Errorf("line %d: a block before any # file:", n)
			}
			cur, into, old, new = &Edit{File: file}, &old, nil, nil
		case cur != nil && line == markSep && into == &old:
			into = &new
		case cur != nil && line == markNew && into == &new:
			cur.Old, cur.New = strings.Join(old, "\n")+"\n", strings.Join(new, "\n")+"\n"
			if len(new) == 0 {
				cur.New = ""
			}
			if len(old) == 0 {
				return m, fmt.Errorf("line %d: an empty old snippet", n)
			}
			m.Edits = append(m.Edits, *cur)
			cur = nil
		case cur != nil:
			*into = append(*into, line)
		case strings.TrimSpace(line) == "":
		default:
			return m, fmt.Errorf("line %d: %q outside a block", n, line)
		}
	}
	switch {
	case cur != nil:
		return m, errors.New("a block without its end")
	case len(m.Edits) == 0:
		return m, errors.New("no block")
	case m.Tests == "":
		return m, errors.New("no # tests:")
	}
	return m, s.Err()
}

// Format is m as a mutant file's text.
func Format(m Mutant) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# promise: %s\n# tests: %s\n", m.Promise, m.Tests)
	if m.Equivalent != "" {
		fmt.Fprintf(&b, "# equivalent: %s\n", m.Equivalent)
	}
	file := ""
	for _, e := range m.Edits {
		if e.File != file {
			fmt.Fprintf(&b, "# file: %s\n", e.File)
			file = e.File
		}
		fmt.Fprintf(&b, "%s\n%s%s\n%s%s\n", markOld, e.Old, markSep, e.New, markNew)
	}
	return b.String()
}

// ErrStale is a mutant whose snippet the tree does not hold once.
var ErrStale = errors.New("stale")

// Apply makes m's edits in the tree at root and returns the files it changed,
// relative to root. An edit whose snippet its file does not hold is made
// where the tree's other Go files hold it once (moved reports those); none is
// made unless all can be.
func Apply(root string, m Mutant) (changed, moved []string, err error) {
	contents, changed, moved, err := plan(root, m)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range changed {
		if err := os.WriteFile(filepath.Join(root, f), []byte(contents[f]), 0o644); err != nil {
			return nil, nil, err
		}
	}
	return changed, moved, nil
}

// Check is Apply without the writing: whether m still applies to the tree at
// root, and which of its snippets moved to another file.
func Check(root string, m Mutant) (moved []string, err error) {
	_, _, moved, err = plan(root, m)
	return moved, err
}

// plan is the content of each file m changes, once its edits are made.
func plan(root string, m Mutant) (contents map[string]string, changed, moved []string, err error) {
	contents = map[string]string{}
	for _, e := range m.Edits {
		file, err := locate(root, e, contents)
		if err != nil {
			return nil, nil, nil, err
		}
		if file != e.File {
			moved = append(moved, e.File+" -> "+file)
		}
		if _, ok := contents[file]; !ok {
			b, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				return nil, nil, nil, err
			}
			contents[file] = string(b)
			changed = append(changed, file)
		}
		contents[file] = replaceLines(contents[file], e.Old, e.New)
	}
	return contents, changed, moved, nil
}

// locate is the file that holds e's snippet once: its own, else the one Go
// file of the tree that does. contents holds files already edited.
func locate(root string, e Edit, contents map[string]string) (string, error) {
	read := func(f string) (string, bool) {
		if c, ok := contents[f]; ok {
			return c, true
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		return string(b), err == nil
	}
	if c, ok := read(e.File); ok {
		switch countLines(c, e.Old) {
		case 1:
			return e.File, nil
		case 0:
		default:
			return "", fmt.Errorf("%w: %s holds the snippet more than once", ErrStale, e.File)
		}
	}
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "mutation" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || rel == e.File {
			return nil
		}
		if c, ok := read(rel); ok {
			for range countLines(c, e.Old) {
				found = append(found, rel)
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("%w: no Go file holds the snippet of %s", ErrStale, e.File)
	}
	return "", fmt.Errorf("%w: the snippet of %s is in %s", ErrStale, e.File, strings.Join(found, ", "))
}

// lineStarts are the offsets where text holds snippet as whole lines: from a
// line's start (a snippet "\tx()\n" is not in "\t\tx()\n").
func lineStarts(text, snippet string) []int {
	var at []int
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], snippet)
		if j < 0 {
			break
		}
		if k := i + j; k == 0 || text[k-1] == '\n' {
			at = append(at, k)
		}
		i += j + 1
	}
	return at
}

func countLines(text, snippet string) int { return len(lineStarts(text, snippet)) }

// replaceLines replaces the first whole-line snippet in text with repl.
func replaceLines(text, snippet, repl string) string {
	at := lineStarts(text, snippet)
	if len(at) == 0 {
		return text
	}
	return text[:at[0]] + repl + text[at[0]+len(snippet):]
}

// Read parses the mutant file at path.
func Read(path string) (Mutant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Mutant{}, err
	}
	m, err := Parse(string(b))
	if err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "apply" {
		fmt.Fprintln(os.Stderr, "usage: mutant apply -root DIR FILE.mutant")
		os.Exit(2)
	}
	fl := flag.NewFlagSet("mutant apply", flag.ExitOnError)
	root := fl.String("root", ".", "the tree to mutate")
	fl.Parse(os.Args[2:])
	if fl.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mutant apply -root DIR FILE.mutant")
		os.Exit(2)
	}
	m, err := Read(fl.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutant:", err)
		os.Exit(2)
	}
	changed, moved, err := Apply(*root, m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutant:", err)
		os.Exit(1)
	}
	for _, mv := range moved {
		fmt.Fprintln(os.Stderr, "mutant: moved:", mv)
	}
	for _, f := range changed {
		fmt.Println(f)
	}
}
