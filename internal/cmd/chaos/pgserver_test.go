package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/skips"
	"github.com/countersign/countersign/journal"
)

// needServerBinaries skips t (fails it under COUNTERSIGN_REQUIRE_POSTGRES=1, as
// CI sets) when PostgreSQL's server binaries are not on this machine.
func needServerBinaries(t *testing.T) {
	t.Helper()
	if _, err := postgresBinaries(); errors.Is(err, ErrNoPostgresBinaries) {
		if os.Getenv("COUNTERSIGN_REQUIRE_POSTGRES") == "1" {
			t.Fatal(err.Error() + " (COUNTERSIGN_REQUIRE_POSTGRES=1)")
		}
		t.Skip(skips.Need("PostgreSQL's server binaries (initdb and pg_ctl)", err.Error())) // counted by go run ./internal/testrun
	}
}

// ownPostgres starts the run's own PostgreSQL cluster for t, removed at its end,
// and skips t when the server's binaries are not on this machine.
func ownPostgres(t *testing.T) *pgServer {
	t.Helper()
	needServerBinaries(t)
	s, err := startPostgres(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove)
	return s
}

// The run's own server restarts, cleanly and as a crash, keeping what was
// committed, and answers again on the same port.
func TestOwnPostgresRestarts(t *testing.T) {
	s := ownPostgres(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	for _, immediate := range []bool{false, true} {
		// A replica joined before the restart finds its name lock gone with it.
		j, err := journal.Open(ctx, s.URL())
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Join(ctx, "telegram", "r1", 2*time.Second); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.restart(ctx, immediate); err != nil {
			t.Fatal(err)
		}
		select {
		case <-j.NameLost():
			t.Logf("the replica found its name lock lost %s after the restart began", time.Since(start).Round(time.Millisecond))
		case <-time.After(10 * time.Second):
			t.Errorf("a replica joined before a restart (immediate %v) still holds its name 10 s on", immediate)
		}
		j.Close()
		var n int
		// The pool's old session died with the server: the first query may meet it.
		for tries := 0; ; tries++ {
			err = db.QueryRowContext(ctx, "SELECT count(*) FROM kept").Scan(&n)
			if err == nil || tries == 3 {
				break
			}
		}
		if err != nil || n != 1 {
			t.Fatalf("after a restart (immediate %v): %d rows, %v; want the committed one", immediate, n, err)
		}
		t.Logf("restart (immediate %v) took %s", immediate, time.Since(start).Round(time.Millisecond))
	}
}
