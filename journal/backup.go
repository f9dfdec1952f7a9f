package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// ErrBackupPostgres refuses a backup of a journal on PostgreSQL: pg_dump (or the
// server's own backups) copies it consistently, with its roles and settings.
var ErrBackupPostgres = errors.New("a journal on PostgreSQL is backed up with pg_dump or the server's backups")

// Backup writes a consistent copy of the journal to the new file to, while the
// journal stays in use: SQLite's VACUUM INTO, in one read transaction, so the
// copy is the journal as of one moment, whatever writers do meanwhile, and
// costs them no lock. The copy is made 0600 and synced; an existing file is
// never overwritten.
func (j *Journal) Backup(ctx context.Context, to string) error {
	if j.pg != nil {
		return fmt.Errorf("journal: backup: %w", ErrBackupPostgres)
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("journal: backup to %s: %w", to, os.ErrExist)
	}
	if _, err := j.db.Pool(durable).ExecContext(ctx, "VACUUM INTO ?", to); err != nil {
		return fmt.Errorf("journal: backup to %s: %w", to, err)
	}
	f, err := os.OpenFile(to, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("journal: backup to %s: %w", to, err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("journal: backup to %s: %w", to, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: backup to %s: %w", to, err)
	}
	return nil
}
