package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
)

// warnOpenFolders logs a warning for the data folder and the vault folder when other
// users may reach into them (any group or other bit), naming the chmod that closes
// them: the journal and the notes hold message text. What the bot creates there is
// 0600 anyway, but a file made by hand or by an older version may not be, and
// search permission alone reaches it by its name. Modes are left as they are: a
// shared folder may be shared on purpose.
func warnOpenFolders(logger *slog.Logger, cfg Config) {
	if runtime.GOOS == "windows" { // no Unix modes to read
		return
	}
	dirs := []string{cfg.DataDir}
	if v := cfg.vaultDir(); filepath.Clean(v) != filepath.Clean(cfg.DataDir) {
		dirs = append(dirs, v)
	}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		logger.Warn("folder is open to other users; the journal and the vault notes hold message text",
			"folder", dir, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()), "fix", "chmod 700 "+dir)
	}
}
