// Command testrun is go test with a last line that says what was skipped: it
// runs "go test -json" with the flags and packages it is given, prints what go
// test prints (a line per package, and the output of what failed), and ends
// with one line counting the skipped tests by what they needed (PostgreSQL, an
// agent CLI; see internal/skips), so that a run that left them out does not
// pass for one that ran them. Its exit code is go test's. -long, before the
// packages, runs the long suites too (see skips.Long).
//
//	go run ./internal/testrun ./...         # the tests, in about three minutes
//	go run ./internal/testrun -long ./...   # and the chaos and load runs
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/countersign/countersign/internal/skips"
)

func main() {
	args := os.Args[1:]
	cmd := exec.Command("go")
	if len(args) > 0 && args[0] == "-long" {
		args = args[1:]
		cmd.Env = append(os.Environ(), skips.LongEnv+"=1")
	}
	cmd.Args = append([]string{"go", "test", "-json"}, args...)
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
