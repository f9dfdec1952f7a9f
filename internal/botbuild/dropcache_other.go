//go:build !linux

package botbuild

import "os"

// dropCache does nothing where there is no posix_fadvise to ask.
func dropCache(*os.File) {}
