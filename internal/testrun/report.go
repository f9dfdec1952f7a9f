package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/countersign/countersign/internal/skips"
)

// event is one line of go test -json (cmd/test2json), with the fields read here.
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output
	Test       string
	Output     string
}

// report prints a go test -json stream as go test prints its packages, and
// counts the skipped tests.
type report struct {
	w        io.Writer
	tests    map[string]*strings.Builder // output of each running test, by package and name
	pkgOut   map[string]*strings.Builder // output of each package outside its tests
	failures map[string]*strings.Builder // output of each package's failed tests
	needs    map[string]int              // skipped tests by what they needed
	other    int                         // tests skipped for another reason
	failed   bool                        // a package failed
}

func newReport(w io.Writer) *report {
	return &report{w: w, tests: map[string]*strings.Builder{}, pkgOut: map[string]*strings.Builder{},
		failures: map[string]*strings.Builder{}, needs: map[string]int{}}
}

// read prints the stream as it comes; a line that is not an event is printed
// as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024) // a test may print long lines
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.take(e)
	}
	return sc.Err()
}

func (r *report) take(e event) {
	key := e.Package + "\x00" + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "output" && e.Test != "":
		buf(r.tests, key).WriteString(e.Output)
	case e.Action == "output":
		buf(r.pkgOut, e.Package).WriteString(e.Output)
	case e.Test != "" && (e.Action == "pass" || e.Action == "skip" || e.Action == "fail"):
		out := buf(r.tests, key).String()
		delete(r.tests, key)
		switch e.Action {
		case "fail":
			buf(r.failures, e.Package).WriteString(withoutProgress(out))
		case "skip":
			r.skipped(out)
		}
	case e.Action == "pass" || e.Action == "skip" || e.Action == "fail":
		r.packageEnded(e)
	}
}

// packageEnded prints what go test prints of a package: its one line when it
// passed, and the output of its failed tests and its own when it failed.
func (r *report) packageEnded(e event) {
	own := buf(r.pkgOut, e.Package).String()
	if e.Action == "fail" {
		r.failed = true
		fmt.Fprint(r.w, buf(r.failures, e.Package).String()+withoutProgress(own))
	} else {
		for _, l := range strings.SplitAfter(own, "\n") {
			if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
				fmt.Fprint(r.w, l)
			}
		}
	}
	delete(r.pkgOut, e.Package)
	delete(r.failures, e.Package)
}

// skipped counts a skipped test by what its output says it needed.
func (r *report) skipped(out string) {
	for _, l := range strings.Split(out, "\n") {
		if what := skips.Needed(l); what != "" {
			r.needs[what]++
			return
		}
	}
	r.other++
}

// summary is the run's last line: how many tests were skipped, by what they
// needed, most first.
func (r *report) summary() string {
	if len(r.needs) == 0 && r.other == 0 {
		return "skipped: none"
	}
	whats := make([]string, 0, len(r.needs))
	for w := range r.needs {
		whats = append(whats, w)
	}
	sort.Slice(whats, func(i, j int) bool {
		a, b := whats[i], whats[j]
		return r.needs[a] > r.needs[b] || r.needs[a] == r.needs[b] && a < b
	})
	var parts []string
	for i, w := range whats {
		n, verb := r.needs[w], "need"
		if n == 1 {
			verb = "needs"
		}
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s %s", n, tests(n), verb, w))
		} else {
			parts = append(parts, fmt.Sprintf("%d %s %s", n, verb, w))
		}
	}
	line := "skipped: " + strings.Join(parts, ", ")
	if r.other > 0 {
		if len(parts) > 0 {
			line += "; "
		}
		line += fmt.Sprintf("%d %s for other reasons (-short, the platform; go test -v says which)", r.other, tests(r.other))
	}
	return line
}

func tests(n int) string {
	if n == 1 {
		return "test"
	}
	return "tests"
}

// withoutProgress drops the lines go test prints only with -v (=== RUN and
// the like), which -json always carries.
func withoutProgress(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "=== ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func buf(m map[string]*strings.Builder, key string) *strings.Builder {
	b, ok := m[key]
	if !ok {
		b = &strings.Builder{}
		m[key] = b
	}
	return b
}
