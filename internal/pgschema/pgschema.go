// Package pgschema gives the benchmark and chaos commands a PostgreSQL schema of
// a run's own: made fresh, named in the URL's search_path, and dropped after, so
// that runs beside each other on one database never share a journal.
package pgschema

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/countersign/countersign/journal"
)

// Fresh creates a schema named prefix and eight random hex digits in the
// database at base, and returns base with it as the search_path, and its name.
func Fresh(ctx context.Context, base, prefix string) (dsn, schema string, err error) {
	u, err := url.Parse(base)
	if err != nil || !journal.IsPostgres(base) {
		return "", "", fmt.Errorf("-journal: want a postgres:// URL, got %q", journal.Where(base))
	}
	b := make([]byte, 4)
	rand.Read(b)
	schema = prefix + hex.EncodeToString(b)
	if err := Exec(ctx, base, "CREATE SCHEMA "+schema); err != nil {
		return "", "", fmt.Errorf("create schema %s in %s: %w", schema, journal.Where(base), err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// Drop drops schema, which Fresh made, from the database at base.
func Drop(base, schema string) error {
	return Exec(context.Background(), base, "DROP SCHEMA "+schema+" CASCADE")
}

// Exec runs stmt on the database at dsn, on a connection of its own.
func Exec(ctx context.Context, dsn, stmt string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}
