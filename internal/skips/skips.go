// Package skips words the skip of a test that needs what a machine may not have
// (a PostgreSQL server, an agent CLI) in one form, "needs WHAT: why", so that a
// run's summary (internal/testrun) can count the tests each need left out: a run
// that skipped them must not read as a run that passed them.
package skips

import (
	"os"
	"strings"
)

const prefix = "needs "

// Need is the message of a skip for lack of what, e.g. Need("PostgreSQL
// (COUNTERSIGN_TEST_POSTGRES)", "the server at … cannot be reached"). what
// must hold no ": ".
func Need(what, detail string) string { return prefix + what + ": " + detail }

// Needed returns what a line of a skipped test's output says the test needed,
// or "" when the line is not a Need message. The line may begin with the
// "file.go:12: " the testing package puts before a message.
func Needed(line string) string {
	line = strings.TrimSpace(line)
	i := strings.Index(line, ": "+prefix)
	switch {
	case strings.HasPrefix(line, prefix):
		line = line[len(prefix):]
	case i >= 0 && !strings.ContainsAny(line[:i], " \t"): // only a file:line before it
		line = line[i+2+len(prefix):]
	default:
		return ""
	}
	what, _, ok := strings.Cut(line, ": ")
	if !ok {
		return ""
	}
	return what
}

// LongEnv is the switch that runs the long suites: the chaos and load runs and
// the other tests that take tens of seconds each. Without it the tests a
// newcomer runs finish in minutes; CI sets it.
const LongEnv = "COUNTERSIGN_LONG"

// LongSuites is what Long's skips say they need, as the run's summary counts it.
const LongSuites = "the long suites (" + LongEnv + "=1)"

// Long skips t, saying why it is long, unless LongEnv is set to 1.
func Long(t interface{ Skip(...any) }, why string) {
	if os.Getenv(LongEnv) != "1" {
		t.Skip(Need(LongSuites, why))
	}
}
