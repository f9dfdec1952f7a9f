package botbuild

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache asks the kernel to forget f's cached pages (POSIX_FADV_DONTNEED).
func dropCache(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
