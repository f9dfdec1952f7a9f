//go:build !unix

package journal

import "os"

// lockFile cannot lock across processes where there is no flock: ownership is then
// the operator's word, and the README says to run one bot per data folder.
func lockFile(*os.File) error { return nil }
