//go:build !unix

package journal

import "os"

// lockFile cannot lock across processes where there is no flock: ownership is then
// the operator's word, and the README says to run one bot per data folder.
func lockFile(*os.File) error { return nil }

// lookLock cannot tell where there is no flock, and answers as if an owner held
// the lock: a request is never turned away for want of an owner nobody can see.
func lookLock(*os.File) error { return errLocked }
