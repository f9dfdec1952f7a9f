// Command testrun is go test with a last line that says what was skipped: it
// runs "go test -json" with the flags and packages it is given, prints what go
// test prints (a line per package, and the output of what failed), and ends
// with one line counting the skipped tests by what they needed (PostgreSQL, an
// agent CLI; see internal/skips), so that a run that left them out does not
// pass for one that ran them. Its exit code is go test's. -long, before the
// packages, runs the long suites too (see skips.Long). Tests run twice as many
// at a time as the machine has cores unless -parallel says otherwise (testArgs).
//
//	go run ./internal/testrun ./...         # the tests, in about 3 minutes on 2 cores
//	go run ./internal/testrun -long ./...   # and the chaos and load runs
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/countersign/countersign/internal/skips"
)

func main() {
	args := os.Args[1:]
	cmd := exec.Command("go")
	if len(args) > 0 && args[0] == "-long" {
		args = args[1:]
		cmd.Env = append(os.Environ(), skips.LongEnv+"=1")
	}
	cmd.Args = append([]string{"go", "test", "-json"}, testArgs(args, runtime.NumCPU())...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
	r := newReport(os.Stdout)
	readErr := r.read(out)
	err = cmd.Wait()
	fmt.Fprintln(os.Stdout, r.summary())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil || readErr != nil:
		fmt.Fprintln(os.Stderr, "testrun:", errors.Join(err, readErr))
		os.Exit(1)
	case r.failed:
		os.Exit(1)
	}
}

// testArgs are go test's arguments for args on a machine of cpus cores: args,
// after -parallel 2×cpus when they set no -parallel. Most tests wait (on child
// bots, agent CLIs, the database, a stand-in's delay) rather than compute, and
// go test's default, one at a time a core, leaves the cores idle while they do
// (cmd/bot: about 90 s with it, 60 s with twice that, on 2 cores).
func testArgs(args []string, cpus int) []string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && (name == "parallel" || name == "test.parallel") {
			return args
		}
	}
	return append([]string{"-parallel", strconv.Itoa(2 * max(1, cpus))}, args...)
}
