package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// diskSize is the tmpfs the data folder lives on: room for the largest run's
// journal and vault many times over, so that only the filler fills it.
const diskSize = 64 << 20

// disk is the data folder's own small filesystem, which the run fills to the last
// byte and empties again: the bot's journal and vault meet ENOSPC and SQLite's
// "database or disk is full" from the kernel, as on a real full disk.
type disk struct {
	dir    string
	filler string

	mu   sync.Mutex
	full bool
}

// mountDisk mounts a tmpfs on dir (which must be empty). It needs root, or
// CAP_SYS_ADMIN; the error says why it could not.
func mountDisk(dir string) (*disk, error) {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		fmt.Sprintf("size=%d,mode=0700", diskSize)); err != nil {
		return nil, fmt.Errorf("mount a tmpfs on the data folder: %w", err)
	}
	return &disk{dir: dir, filler: filepath.Join(dir, ".chaos-filler")}, nil
}

// fill writes the filler until the filesystem has no byte left.
func (d *disk) fill() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(d.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	d.full = true
	for _, size := range []int{1 << 20, 4096, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return err
				}
				break
			}
		}
	}
	return nil
}

// free removes the filler: the space comes back.
func (d *disk) free() {
	d.mu.Lock()
	defer d.mu.Unlock()
	os.Remove(d.filler)
	d.full = false
}

func (d *disk) isFull() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.full
}

// unmount ends the filesystem, after the run read what it holds.
func (d *disk) unmount() {
	if err := syscall.Unmount(d.dir, syscall.MNT_DETACH); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: unmount %s: %v\n", d.dir, err)
	}
}
