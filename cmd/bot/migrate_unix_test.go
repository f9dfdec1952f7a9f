//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/journaltest"
)

// countersign migrate refuses to migrate a SQLite journal that a bot is still
// sending from, names the bot's process and says what to do; once the bot
// has stopped, it migrates.
func TestMigrateWaitsForTheRunningBotToStop(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(data, "journal.db")
	left := journaltest.Older(t, file, 4)
	stop := journaltest.HoldOwner(t, file, "telegram", 4242)
	r := runMain(t, "", nil, "migrate", "-data", data)
	want := "countersign migrate: journal: open " + file + ": schema version 4, this binary's "
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "process 4242 sends telegram operations from it") || !strings.Contains(r.stderr, "stop that process, then run `countersign migrate`") {
		t.Fatalf("migrate under a running bot: exit %d %q; want 1 naming it and what to do", r.code, r.stderr)
	}
	stop()
	if r := runMain(t, "", nil, "migrate", "-data", data); r.code != 0 || !strings.Contains(r.stdout, "applied "+strings.Join(left, ", ")) {
		t.Errorf("migrate once the bot stopped: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
