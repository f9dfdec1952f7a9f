//go:build unix

package cli

import (
	"os/exec"
	"sync"
	"syscall"
)

// umaskMu makes setting the umask, starting a CLI and restoring it one step, so
// that two starts at once cannot leave the process with the private umask.
var umaskMu sync.Mutex

// startPrivate starts cmd with the umask 077, which it inherits: what the CLI
// writes (Codex makes its session records 0644 under the usual umask, and they
// hold the chat) is then its user's alone. The umask is the process's, so for
// the moment of the start the bot's own new files are private too, which they
// are anyway.
func startPrivate(cmd *exec.Cmd) error {
	umaskMu.Lock()
	defer umaskMu.Unlock()
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	return cmd.Start()
}
