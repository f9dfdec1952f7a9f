// Package botbuild gives the benchmarks that measure the bot's memory
// (startbench, loadbench) a binary in the state an installed one is in.
//
// Peak RSS counts the pages of the executable a process has mapped, and on
// kernels whose page cache holds large folios (Linux 6.x on ext4 here) how many
// that is depends on how the file came into the cache, not on the program.
// The file `go build` has just written is cached in 2 MiB folios (the linker
// writes its output through a mapping), each mapped whole at the first touch:
// the same binary, linked in place, showed 57 MiB of file-backed RSS at start
// where a copy read back from the disk showed 35 MiB. A bot is run from a file
// that was copied into place (a package, an image, scp) and read from the disk
// at its first exec; Install makes that file, so that a figure measures the
// program and not the linker's cache.
package botbuild

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles ./cmd/bot and installs it into dir as "countersign" (see
// Install), returning its path. The linker's own output is removed.
func Build(dir string) (string, error) {
	linked := filepath.Join(dir, "countersign.linked")
	if out, err := exec.Command("go", "build", "-o", linked, "github.com/countersign/countersign/cmd/bot").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the bot: %v\n%s", err, out)
	}
	defer os.Remove(linked)
	return Install(linked, dir)
}

// Install copies the binary src into dir as "countersign", syncs it and asks
// the kernel to drop its cached pages, so that its first exec reads it from the
// disk as after an install. It returns the copy's path. Dropping the cache is
// advice: where the system has none to take, the copy is still a fresh file.
func Install(src, dir string) (string, error) {
	dst := filepath.Join(dir, "countersign")
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("install the bot: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return "", fmt.Errorf("install the bot: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", fmt.Errorf("install the bot: copy %s: %w", src, err)
	}
	// Only clean pages can be dropped: sync first.
	if err := out.Sync(); err != nil {
		out.Close()
		return "", fmt.Errorf("install the bot: sync %s: %w", dst, err)
	}
	dropCache(out)
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("install the bot: %w", err)
	}
	return dst, nil
}
