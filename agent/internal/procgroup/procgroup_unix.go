//go:build unix

// Package procgroup starts an agent CLI in a process group of its own and kills
// the whole group, so that whatever the CLI started (an MCP server, a shell)
// goes with it and nothing of the caller's does. The bot's CLI providers and the
// tests that run the CLIs share it.
package procgroup

import (
	"os/exec"
	"syscall"
)

// Set makes cmd start in a new process group, whose id is its pid.
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Kill kills cmd's process group; a group already gone, or a command not
// started, is no error.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
