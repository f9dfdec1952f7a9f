//go:build !unix

package cli

import "os/exec"

// startPrivate starts cmd; there is no umask to set here.
func startPrivate(cmd *exec.Cmd) error { return cmd.Start() }
