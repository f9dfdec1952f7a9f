//go:build !unix

package cli

import "os/exec"

func newGroup(*exec.Cmd) {}

// killGroup kills the CLI itself: without process groups, what it started may
// outlive it.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
