// Package journaltest makes, for a test, SQLite journals as another process
// would leave them: at an older schema, as an older binary left it, and owned
// by a bot that is still sending from it.
package journaltest

import (
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the SQLite database/sql driver

	"github.com/countersign/countersign/journal"
)

// Older creates a SQLite journal at file with only the first version of this
// source tree's migrations applied, and returns the names of those it left
// pending, in order.
func Older(t testing.TB, file string, version int) (pending []string) {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	migrations := filepath.Join(filepath.Dir(here), "..", "..", "journal", "migrations")
	db, err := sql.Open("sqlite3", file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all := journal.Migrations(file)
	for _, name := range all[:version] {
		src, err := os.ReadFile(filepath.Join(migrations, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(src)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := db.Exec("PRAGMA user_version = " + strconv.Itoa(version)); err != nil {
		t.Fatal(err)
	}
	return all[version:]
}
