//go:build !unix

// Package procgroup starts an agent CLI in a process group of its own and kills
// the whole group; where there are no process groups, it kills the CLI alone.
package procgroup

import "os/exec"

// Set does nothing where there are no process groups.
func Set(*exec.Cmd) {}

// Kill kills the CLI alone where there are no process groups.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
