package main

import (
	"os"
	"strings"
	"testing"
)

// A recorded go test -json run of three packages: one passing with skips (two
// needing PostgreSQL, one a subtest, and one for another reason), one failing
// with a skip needing an agent CLI, one that does not build. What is printed is
// what go test prints, and the last line counts the skips.
func TestReportPrintsWhatGoTestPrintsAndCountsSkips(t *testing.T) {
	in, err := os.Open("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(in); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"ok  \texample.com/x/a\t",
		"--- FAIL: TestFails (",
		"    b_test.go:3: a log line\n    b_test.go:3: went wrong\n",
		"FAIL\texample.com/x/b\t",
		"c/c_test.go:3:27: undefined: undefined\n",
		"FAIL\texample.com/x/c [build failed]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"=== RUN", "quiet", "--- SKIP", "--- PASS", "needs PostgreSQL"} {
		if strings.Contains(got, not) {
			t.Errorf("output holds %q, which go test prints only with -v:\n%s", not, got)
		}
	}
	if !r.failed {
		t.Error("a failed package is not reported as failed")
	}
	want := "skipped: 2 tests need PostgreSQL (COUNTERSIGN_TEST_POSTGRES), 1 needs the Codex CLI (COUNTERSIGN_CODEX); 1 test for other reasons (-short, the platform; go test -v says which)"
	if got := r.summary(); got != want {
		t.Errorf("summary\n got %q\nwant %q", got, want)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name  string
		needs map[string]int
		other int
		want  string
	}{
		{"nothing skipped", nil, 0, "skipped: none"},
		{"others only", nil, 3, "skipped: 3 tests for other reasons (-short, the platform; go test -v says which)"},
		{"one need", map[string]int{"PostgreSQL": 1}, 0, "skipped: 1 test needs PostgreSQL"},
		{"most first, then by name", map[string]int{"b": 2, "a": 2, "c": 5}, 0, "skipped: 5 tests need c, 2 need a, 2 need b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReport(nil)
			for k, v := range tt.needs {
				r.needs[k] = v
			}
			r.other = tt.other
			if got := r.summary(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
