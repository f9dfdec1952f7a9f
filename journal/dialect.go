package journal

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// A dialect is what one backend says its own way. The journal's statements are
// written once, with ? placeholders, in the SQL both backends read
// (INSERT ... ON CONFLICT, RETURNING, CTEs), and take from the dialect the
// few words that differ: how a table's insertion order is named, how the
// payload's target is read, the row locks of a backend whose writers run side
// by side, and the database's own clock. A third backend is a dialect and its
// migrations (migrations/<name>/).
type dialect struct {
	name string // its migrations' folder: migrations/<name>/
	// seq is the column that orders a table's rows as they were inserted:
	// SQLite's rowid, the explicit seq column of the PostgreSQL schema.
	seq string
	// target reads an operation's payload target, as text.
	target string
	// numbered: the backend's placeholders are $1, $2, ... rather than ?.
	numbered bool
	// sideBySide: writers run at once (writePG), so a write that reads rows to
	// decide what to write locks them as it reads (rowLock). SQLite lets one
	// writer in at a time, and does not parse the clauses.
	sideBySide bool
	// clockMS is the database's clock in Unix milliseconds, read when the
	// statement runs (not at its transaction's start); "" for a backend whose
	// clock is the host's.
	clockMS string
	// schemaVersion reads how many of the backend's migrations are applied.
	schemaVersion string
}

var (
	sqliteDialect = &dialect{
		name:          "sqlite",
		seq:           "rowid",
		target:        "json_extract(payload, '$.target')",
		schemaVersion: "PRAGMA user_version",
	}
	postgresDialect = &dialect{
		name:          "postgres",
		seq:           "seq",
		target:        "(payload::jsonb ->> 'target')",
		numbered:      true,
		sideBySide:    true,
		clockMS:       "EXTRACT(EPOCH FROM clock_timestamp()) * 1000",
		schemaVersion: "SELECT COALESCE(max(version), 0) FROM schema_migrations",
	}
)

// rowLock returns clause (" FOR UPDATE", " FOR SHARE", " FOR UPDATE SKIP
// LOCKED") where writers run side by side, and "" where they do not.
func (d *dialect) rowLock(clause string) string {
	if d.sideBySide {
		return clause
	}
	return ""
}

// now is the database's clock in whole Unix milliseconds as SQL, rounded by
// round (FLOOR, CEIL; "" to the nearest); "" where the backend's clock is the
// host's.
func (d *dialect) now(round string) string {
	if d.clockMS == "" {
		return ""
	}
	return "CAST(" + round + "(" + d.clockMS + ") AS BIGINT)"
}

// bind returns query with its placeholders as the backend reads them: as
// written for ?, numbered $1, $2, ... otherwise. No statement of the journal
// has a ? inside a string literal. A numbered statement is made once and kept
// (bound): the journal's statements are a nearly fixed set.
func (d *dialect) bind(query string) string {
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

// bound holds the numbered statements bind made: an audit append's is one per
// number of records, a list's one per limit; past maxBound, a new one is
// numbered each time.
var (
	bound      sync.Map
	boundCount atomic.Int64
)

const maxBound = 1024
