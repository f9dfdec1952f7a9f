package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A Dialect is what one backend says its own way. Statements are written once,
// with ? placeholders, in the SQL both backends read (INSERT ... ON CONFLICT,
// RETURNING, CTEs), and take from the dialect the few words that differ: how a
// table's insertion order is named, how a payload's target is read, the row
// locks of a backend whose writers run side by side, and the database's own
// clock. A third backend is a dialect, an Open and its migrations.
type Dialect struct {
	Name string // its migrations' folder: migrations/<Name>/
	// Seq is the column that orders a table's rows as they were inserted:
	// SQLite's rowid, the explicit seq column of the PostgreSQL schema.
	Seq string
	// jsonText reads a key of a JSON column as text (JSONText), with %[1]s
	// the column and %[2]s the key.
	jsonText string
	// numbered: the backend's placeholders are $1, $2, ... rather than ?.
	numbered bool
	// SideBySide: writers run at once (DB.Write), so a write that reads rows
	// to decide what to write locks them as it reads (RowLock). SQLite lets one
	// writer in at a time, and does not parse the clauses.
	SideBySide bool
	// LastInsertID: the driver gives an insert's row id (SQLite's rowid, the
	// Seq) from its result, which costs less than reading RETURNING's row.
	LastInsertID bool
	// ChangesInWith: a WITH may hold INSERT, UPDATE and DELETE, so that a
	// write and what it decides go in one statement. SQLite's may not.
	ChangesInWith bool
	// clockMS is the database's clock in Unix milliseconds, read when the
	// statement runs (not at its transaction's start); "" for a backend whose
	// clock is the host's.
	clockMS string
	// SchemaVersion reads how many of the backend's migrations are applied.
	SchemaVersion string
}

var (
	// SQLite is the dialect of a SQLite file (OpenSQLite).
	SQLite = &Dialect{
		Name:          "sqlite",
		Seq:           "rowid",
		LastInsertID:  true,
		jsonText:      "json_extract(%[1]s, '$.%[2]s')",
		SchemaVersion: "PRAGMA user_version",
	}
	// Postgres is the dialect of a PostgreSQL database (OpenPostgres).
	Postgres = &Dialect{
		Name:          "postgres",
		Seq:           "seq",
		jsonText:      "(%[1]s::jsonb ->> '%[2]s')",
		numbered:      true,
		SideBySide:    true,
		ChangesInWith: true,
		clockMS:       "EXTRACT(EPOCH FROM clock_timestamp()) * 1000",
		SchemaVersion: "SELECT COALESCE(max(version), 0) FROM schema_migrations",
	}
)

// JSONText reads key of the JSON held in column as text: key and column are
// the statement's own words, never a value from outside.
func (d *Dialect) JSONText(column, key string) string { return fmt.Sprintf(d.jsonText, column, key) }

// HasClock reports whether the database has a clock of its own that Now
// reads, which every client shares whatever its host's clock says.
func (d *Dialect) HasClock() bool { return d.clockMS != "" }

// RowLock returns clause (" FOR UPDATE", " FOR SHARE", " FOR UPDATE SKIP
// LOCKED") where writers run side by side, and "" where they do not.
func (d *Dialect) RowLock(clause string) string {
	if d.SideBySide {
		return clause
	}
	return ""
}

// Round says how a clock's time is rounded to whole milliseconds.
type Round int

const (
	Nearest Round = iota // to the nearest, as leases are compared
	Down                 // a time no later than the clock's: when a slot is free
	Up                   // a time no earlier: when a slot frees, never before its span
)

// Now is the database's clock in whole Unix milliseconds as SQL, rounded as r
// says; "" where the backend's clock is the host's.
func (d *Dialect) Now(r Round) string {
	if d.clockMS == "" {
		return ""
	}
	fn := map[Round]string{Nearest: "", Down: "FLOOR", Up: "CEIL"}[r]
	return "CAST(" + fn + "(" + d.clockMS + ") AS BIGINT)"
}

// Bind returns query with its placeholders as the backend reads them: as
// written for ?, numbered $1, $2, ... otherwise. No statement of the journal
// has a ? inside a string literal. A numbered statement is made once and kept
// (bound): a store's statements are a nearly fixed set.
func (d *Dialect) Bind(query string) string {
	if !d.numbered {
		return query
	}
	if t, ok := bound.Load(query); ok {
		return t.(string)
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	t := b.String()
	if boundCount.Add(1) <= maxBound {
		bound.Store(query, t)
	}
	return t
}

// bound holds the numbered statements Bind made: an audit append's is one per
// number of records, a list's one per limit; past maxBound, a new one is
// numbered each time.
var (
	bound      sync.Map
	boundCount atomic.Int64
)

const maxBound = 1024
