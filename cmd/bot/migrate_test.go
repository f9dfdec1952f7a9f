package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// countersign migrate on SQLite: -check on a folder without a journal lists every
// migration pending (exit 1) and creates nothing; migrate applies them and names
// them; then both say it is up to date.
func TestMigrateOnSQLite(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	all := journal.Migrations("journal.db")
	r := runMain(t, "", nil, "migrate", "-check", "-data", data)
	if r.code != 1 || !strings.Contains(r.stdout, "schema version 0; pending "+strings.Join(all, ", ")) {
		t.Errorf("migrate -check of no journal: exit %d\n%s%s; want 1 and every migration pending", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(data); err == nil {
		t.Error("migrate -check created the data folder")
	}
	version := strconv.Itoa(len(all))
	want := "journal at " + filepath.Join(data, "journal.db") + ": applied " + strings.Join(all, ", ") + "; schema version " + version + "\n"
	if r := runMain(t, "", nil, "migrate", "-data", data); r.code != 0 || r.stdout != want {
		t.Errorf("migrate: exit %d\n%q%s\nwant %q", r.code, r.stdout, r.stderr, want)
	}
	for _, args := range [][]string{{"migrate", "-data", data}, {"migrate", "-check", "-data", data}} {
		if r := runMain(t, "", nil, args...); r.code != 0 || !strings.HasSuffix(r.stdout, ": schema version "+version+", up to date\n") {
			t.Errorf("bot %v after migrating: exit %d\n%s%s; want up to date", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runMain(t, "", nil, "migrate", "-data", data, "extra"); r.code != 2 {
		t.Errorf("migrate with an argument: exit %d, want 2", r.code)
	}
}

// countersign migrate on PostgreSQL, by -journal and by COUNTERSIGN_DATABASE_URL: it names
// the database by host and name, never by the URL.
func TestMigrateOnPostgres(t *testing.T) {
	url := pgtest.Fresh(t)
	where := journal.Where(url)
	env := map[string]string{"COUNTERSIGN_DATABASE_URL": url}
	all := journal.Migrations(url)
	version := strconv.Itoa(len(all))
	checks := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"check before", env, []string{"migrate", "-check"}, 1, "journal at " + where + ": schema version 0; pending " + strings.Join(all, ", ") + "\n"},
		{"migrate", env, []string{"migrate"}, 0, "journal at " + where + ": applied " + strings.Join(all, ", ") + "; schema version " + version + "\n"},
		{"again, by flag", nil, []string{"migrate", "-journal", url}, 0, "journal at " + where + ": schema version " + version + ", up to date\n"},
		{"check after", env, []string{"migrate", "-check"}, 0, "journal at " + where + ": schema version " + version + ", up to date\n"},
	}
	for _, c := range checks {
		r := runMain(t, "", c.env, append(c.args, "-data", t.TempDir())...)
		if r.code != c.code || r.stdout != c.want {
			t.Errorf("%s: exit %d %q%s; want %d %q", c.name, r.code, r.stdout, r.stderr, c.code, c.want)
		}
		if strings.Contains(r.stdout+r.stderr, "postgres://") {
			t.Errorf("%s printed the URL: %s%s", c.name, r.stdout, r.stderr)
		}
	}
}

// A journal that cannot be reached is exit 1 with a plain message that holds no
// password.
func TestMigrateFailsPlainly(t *testing.T) {
	url := "postgres://countersign:hunter2@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=2"
	for _, args := range [][]string{{"migrate", "-journal", url}, {"migrate", "-check", "-journal", url}} {
		r := runMain(t, "", nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "countersign migrate: ") || !strings.Contains(r.stderr, "127.0.0.1:1/nowhere") {
			t.Errorf("bot %v: exit %d %q; want 1 naming the database", args[:2], r.code, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "hunter2") {
			t.Errorf("bot %v printed the password: %s", args[:2], r.stderr)
		}
	}
}
