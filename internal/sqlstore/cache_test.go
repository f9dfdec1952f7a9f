package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
)

// Every connection's page cache is bounded, in each pool and in a snapshot:
// at SQLite's default each pooled connection could keep 2 MB of C heap.
func TestEveryConnectionBoundsItsPageCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cache.db")
	db := OpenSQLite(file, SQLiteOptions{})
	defer db.Close()
	if _, err := db.Exec(context.Background(), Durable, "CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	snap := OpenSQLite(file, SQLiteOptions{Snapshot: true})
	defer snap.Close()
	for _, tt := range []struct {
		name string
		db   *DB
		c    Commit
	}{{"durable", db, Durable}, {"lazy", db, Lazy}, {"snapshot", snap, Durable}} {
		var got int
		if err := tt.db.Pool(tt.c).QueryRow("PRAGMA cache_size").Scan(&got); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if want := -cacheKiB; got != want {
			t.Errorf("%s: cache_size %d, want %d (KiB)", tt.name, got, want)
		}
	}
}
