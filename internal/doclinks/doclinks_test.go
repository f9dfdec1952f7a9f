// Package doclinks checks the project's Markdown: every relative link in the
// README, docs/ and the other folders' READMEs names a file that exists, and
// every #anchor a heading of that file, as GitHub makes its anchors.
package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// link is an inline link or image: [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// linkText is a link in a heading, whose anchor keeps only the text.
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// fence opens or closes a code block, whose text holds no links.
	fence = regexp.MustCompile("^\\s*(```|~~~)")
)

// The documents the checks read: every Markdown file of the repository but a
// tool's description (tools/*.md, read by models, not people) and testdata.
func documents(t *testing.T) []string {
	var docs []string
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && path != "../.."):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".md") && filepath.Dir(path) != "../../tools":
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// Every relative link of the README and docs/ resolves: the file exists and,
// with an anchor, the file has that heading.
func TestEveryLinkResolves(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headings(string(b))
		return anchors[path]
	}
	checked := 0
	for _, doc := range documents(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(doc, "../../")
		for n, target := range links(string(b)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s, link %d: %s names no file (%s)", name, n+1, target, strings.TrimPrefix(path, "../../"))
					continue
				}
			}
			checked++
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s, link %d: %s: %s has no heading with that anchor", name, n+1, target, strings.TrimPrefix(path, "../../"))
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link was found to check")
	}
}

// links are the targets of the inline links of a Markdown text, outside its
// code blocks and code spans.
func links(text string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if in {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(stripCode(line), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// stripCode removes a line's code spans.
func stripCode(line string) string {
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// headings are the anchors GitHub gives a Markdown text's headings: the text
// lowercased, its punctuation dropped but for hyphens and underscores, spaces
// made hyphens; a repeated one gets -1, -2, ….
func headings(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if in || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h = strings.NewReplacer("`", "", "*", "").Replace(h)
		h = linkText.ReplaceAllString(h, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
