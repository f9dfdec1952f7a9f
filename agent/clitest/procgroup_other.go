//go:build !unix

package clitest

import "os/exec"

// newGroup does nothing where there are no process groups.
func newGroup(*exec.Cmd) {}

// killGroup kills the CLI alone where there are no process groups.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
