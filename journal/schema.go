package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/countersign/countersign/internal/sqlstore"
)

// Migrated returns the migrations Open applied, oldest first, by backend and
// file name ("sqlite/0005_verifications.sql", "postgres/0001_init.sql"): none
// when the journal was up to date.
func (j *Journal) Migrated() []string { return slices.Clone(j.migrated) }

// SchemaVersion returns the journal's schema version: how many of the migrations
// of its backend it has (see Migrations).
func (j *Journal) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := j.db.Pool(durable).QueryRowContext(ctx, j.d.SchemaVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("journal: schema version: %w", err)
	}
	return v, nil
}

// Migrations returns the names of the migrations this binary knows for the
// journal called name (a SQLite file or a PostgreSQL URL), in the order they
// apply: schema version n means the first n are applied.
func Migrations(name string) []string {
	d := sqlstore.SQLite
	if IsPostgres(name) {
		d = sqlstore.Postgres
	}
	files := migrationFiles(d)
	for i, f := range files {
		files[i] = migrationName(f)
	}
	return files
}

// migrationFiles returns the paths of the embedded migrations of d's backend,
// in the order they apply.
func migrationFiles(d *sqlstore.Dialect) []string {
	names, _ := fs.Glob(migrations, "migrations/"+d.Name+"/*.sql") // the pattern is well formed
	slices.Sort(names)
	return names
}

// migrationName names the migration at file as people read it:
// "sqlite/0005_verifications.sql", or "postgres/0001_init.sql".
func migrationName(file string) string {
	return strings.TrimPrefix(file, "migrations/")
}

// PendingMigrations returns the migrations Open would apply to the journal called name,
// without applying them and without creating anything: all of them for a SQLite
// file that does not exist or a PostgreSQL schema without the journal's tables.
// A schema newer than this binary knows is an error, as it is for Open.
func PendingMigrations(ctx context.Context, name string) ([]string, error) {
	all := Migrations(name)
	version, err := storedVersion(ctx, name)
	if err != nil {
		where := name
		if IsPostgres(name) {
			where = Where(name)
		}
		return nil, fmt.Errorf("journal: %s: %w", where, err)
	}
	if version > len(all) {
		return nil, fmt.Errorf("journal: schema version %d is newer than this binary knows (%d)", version, len(all))
	}
	return all[version:], nil
}

// storedVersion reads the schema version of the journal called name, read-only:
// 0 when there is no journal yet.
func storedVersion(ctx context.Context, name string) (int, error) {
	if IsPostgres(name) {
		return storedVersionPostgres(ctx, name)
	}
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "5000")
	db, err := sql.Open("sqlite3", "file:"+name+"?"+q.Encode())
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var v int
	err = db.QueryRowContext(ctx, sqlstore.SQLite.SchemaVersion).Scan(&v)
	return v, err
}

func storedVersionPostgres(ctx context.Context, name string) (int, error) {
	cfg, err := pgx.ParseConfig(name)
	if err != nil {
		return 0, errors.New("bad PostgreSQL URL") // the parse error may quote the password
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	var table sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT to_regclass('schema_migrations')::text").Scan(&table); err != nil {
		return 0, fmt.Errorf("connect: %w", err)
	}
	if !table.Valid {
		return 0, nil
	}
	var v int
	err = db.QueryRowContext(ctx, sqlstore.Postgres.SchemaVersion).Scan(&v)
	return v, err
}
