// Package pgtest gives tests a fresh, empty PostgreSQL journal of their own: a
// schema created for the test and dropped after it, named in the URL's
// search_path. The server is COUNTERSIGN_TEST_POSTGRES (default the local one,
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable); when it cannot be
// reached the test is skipped, or fails when COUNTERSIGN_REQUIRE_POSTGRES=1 (CI),
// so that a missing server never passes for a green run.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/internal/skips"
)

// DefaultURL is the server tests use when COUNTERSIGN_TEST_POSTGRES is not set.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// ServerURL returns the test server's URL.
func ServerURL() string {
	if u := os.Getenv("COUNTERSIGN_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultURL
}

// reach is whether the server answered, asked once per test binary.
var reach = sync.OnceValue(func() error {
	db, err := sql.Open("pgx", ServerURL())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
})

// Server returns the test server's URL, for a test that makes its own schema. It
// skips tb (fails it under COUNTERSIGN_REQUIRE_POSTGRES=1) when the server cannot
// be reached.
func Server(tb testing.TB) string {
	tb.Helper()
	if err := reach(); err != nil {
		msg := "PostgreSQL at COUNTERSIGN_TEST_POSTGRES (default " + DefaultURL + ") cannot be reached: " + err.Error()
		if os.Getenv("COUNTERSIGN_REQUIRE_POSTGRES") == "1" {
			tb.Fatal(msg + " (COUNTERSIGN_REQUIRE_POSTGRES=1)")
		}
		tb.Skip(skips.Need("PostgreSQL (COUNTERSIGN_TEST_POSTGRES)", msg)) // counted by go run ./internal/testrun
	}
	return ServerURL()
}

// EachBackend runs test once per backend of the journal, as a subtest named
// after it ("sqlite", "postgres"), with the name journal.Open takes of a
// fresh, empty journal of the test's own: a file in the test's folder, or a
// schema of its own (Fresh). The run on PostgreSQL is a long suite (what says
// what it is, for the skip): the shared suites again on PostgreSQL are the
// PostgreSQL matrix.
func EachBackend(t *testing.T, what string, test func(t *testing.T, name string)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, filepath.Join(t.TempDir(), "j.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		skips.Long(t, what)
		test(t, Fresh(t))
	})
}

// Fresh returns the URL of a journal in a new, empty schema, dropped when tb
// ends. It skips tb (fails it under COUNTERSIGN_REQUIRE_POSTGRES=1) when the
// server cannot be reached.
func Fresh(tb testing.TB) string {
	tb.Helper()
	Server(tb)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", ServerURL())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		db.Close()
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		defer db.Close()
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Through returns name's URL (a journal's, from Fresh) with its host and port
// those of a proxy that can cut the network to the server, and the proxy,
// closed when tb ends.
func Through(tb testing.TB, name string) (string, *partition.Proxy) {
	tb.Helper()
	u, err := url.Parse(name)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := partition.New(u.Host)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	return u.String(), p
}
