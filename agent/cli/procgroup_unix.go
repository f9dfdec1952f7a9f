//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// newGroup starts cmd in a process group of its own, so that killGroup reaches
// whatever the CLI starts and nothing of the bot's.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills cmd's process group; a group already gone is no error.
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return err
	}
	return nil
}
