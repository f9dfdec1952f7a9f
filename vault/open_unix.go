//go:build unix

package vault

import (
	"errors"
	"syscall"
)

// openFlags make opening a note neither follow a symbolic link (the open fails with
// ELOOP) nor wait on a FIFO for a writer that never comes. They do not change how a
// regular file is read.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isLinkError reports whether an open with openFlags failed because the name is a
// symbolic link.
func isLinkError(err error) bool { return errors.Is(err, syscall.ELOOP) }
