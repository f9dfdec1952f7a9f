package sqlstore

import (
	"path/filepath"
	"testing"
)

// BenchmarkWriteOneRow is the smallest write a bot makes many of (an update
// stored in the inbox): one insert, committed durably, under a context that
// can end, as the bot's can.
func BenchmarkWriteOneRow(b *testing.B) {
	db := OpenSQLite(filepath.Join(b.TempDir(), "w.db"), SQLiteOptions{})
	defer db.Close()
	ctx := b.Context()
	if _, err := db.Exec(ctx, Durable, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := db.Write(ctx, Durable, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO t(v) VALUES(?)", "an update")
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
