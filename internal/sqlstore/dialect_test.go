package sqlstore

import "testing"

// A statement is written once, with ? placeholders: SQLite reads it as it is,
// PostgreSQL with its placeholders numbered in order.
func TestADialectBindsPlaceholdersItsOwnWay(t *testing.T) {
	for _, tt := range []struct {
		d           *Dialect
		query, want string
	}{
		{SQLite, "UPDATE inbox SET handled_at = ? WHERE key = ?", "UPDATE inbox SET handled_at = ? WHERE key = ?"},
		{Postgres, "UPDATE inbox SET handled_at = ? WHERE key = ?", "UPDATE inbox SET handled_at = $1 WHERE key = $2"},
		{Postgres, "SELECT 1", "SELECT 1"},
		{Postgres, "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"},
	} {
		if got := tt.d.Bind(tt.query); got != tt.want {
			t.Errorf("%s bind(%q) = %q, want %q", tt.d.Name, tt.query, got, tt.want)
		}
		if again := tt.d.Bind(tt.query); again != tt.want { // the kept one
			t.Errorf("%s bind(%q) again = %q, want %q", tt.d.Name, tt.query, again, tt.want)
		}
	}
}

// Row locks and the database's clock are PostgreSQL's words: on SQLite, whose
// one writer needs no row lock and whose clock is the host's, they are empty.
func TestADialectSaysOnlyWhatItsBackendParses(t *testing.T) {
	if got := SQLite.RowLock(" FOR UPDATE"); got != "" {
		t.Errorf("sqlite rowLock = %q, want none", got)
	}
	if got := Postgres.RowLock(" FOR UPDATE"); got != " FOR UPDATE" {
		t.Errorf("postgres rowLock = %q", got)
	}
	if got := SQLite.Now(Down); got != "" {
		t.Errorf("sqlite now = %q, want none: its leases go by the host's clock", got)
	}
	for round, want := range map[Round]string{
		Nearest: "CAST((EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)",
		Down:    "CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)",
		Up:      "CAST(CEIL(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)",
	} {
		if got := Postgres.Now(round); got != want {
			t.Errorf("postgres now(%d) = %q, want %q", round, got, want)
		}
	}
}

// A key of a JSON column is read as text in each backend's words.
func TestADialectReadsAJSONKeyItsOwnWay(t *testing.T) {
	for d, want := range map[*Dialect]string{
		SQLite:   "json_extract(payload, '$.target')",
		Postgres: "(payload::jsonb ->> 'target')",
	} {
		if got := d.JSONText("payload", "target"); got != want {
			t.Errorf("%s JSONText = %q, want %q", d.Name, got, want)
		}
	}
}
