// Package rigtest builds, for a test, what countersign run builds (through
// internal/wiring): a journal, SQLite in the test's temporary folder or
// PostgreSQL in a schema of the test's own, the tools over the test's sender,
// a vault, the verifier, the operator and the command handler, all closed when
// the test ends. A package's tests build on it rather than wiring an operator
// by hand, so that a new dependency of the operator is wired in one place.
package rigtest

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// Rig is an operator wired as the binary wires it, over a journal of the
// test's own.
type Rig struct {
	// Dir is the test's data folder: the SQLite journal (journal.db), the
	// vault and the file store are in it.
	Dir     string
	Journal *journal.Journal
	Policy  *policy.Policy
	Vault   *vault.Vault
	*wiring.Assembly
}

type config struct {
	dir       string
	journal   string
	over      *journal.Journal
	jopts     []journal.Option
	senderOf  func(*journal.Journal) tools.Sender
	postgres  bool
	policy    *policy.Policy
	edits     []func(*policy.Policy)
	own       bool
	replica   string
	lease     time.Duration
	parts     wiring.Parts
	partEdits []func(*wiring.Parts)
	transport bool // set by Transport: "" is a choice too
}

// An Option changes what New builds.
type Option func(*config)

// Policy runs the rig under p instead of the repository's policies.yaml.
func Policy(p *policy.Policy) Option { return func(c *config) { c.policy = p } }

// EditPolicy changes the policy before anything is built from it (the access
// lists, a tool's approval).
func EditPolicy(edit func(*policy.Policy)) Option {
	return func(c *config) { c.edits = append(c.edits, edit) }
}

// Sender delivers the rig's commits; without it, commits are not sent.
func Sender(s tools.Sender) Option { return func(c *config) { c.parts.Sender = s } }

// SenderOf builds the sender over the rig's journal, once it is open: a
// Telegram bot's (telegram.New(ctx, j, …).Sender()), which keeps its own
// records in the journal.
func SenderOf(build func(*journal.Journal) tools.Sender) Option {
	return func(c *config) { c.senderOf = build }
}

// JournalOptions opens the journal with opts (a size limit: a full disk).
func JournalOptions(opts ...journal.Option) Option {
	return func(c *config) { c.jopts = append(c.jopts, opts...) }
}

// Clock is the operator's and the verifier's clock.
func Clock(clock operator.Clock) Option { return func(c *config) { c.parts.Clock = clock } }

// Transport names what the sender delivers through (default "telegram").
func Transport(name string) Option {
	return func(c *config) { c.parts.Transport, c.transport = name, true }
}

// Owning makes the rig's process the sender of its transport's operations,
// with their crash recovery (journal.Own), as countersign run is.
func Owning() Option { return func(c *config) { c.own = true } }

// Replica joins the journal as replica name of the transport, with lease (0:
// the default), as countersign run -replica does, instead of owning the
// transport alone. An empty name changes nothing.
func Replica(name string, lease time.Duration) Option {
	return func(c *config) { c.replica, c.lease = name, lease }
}

// Dir keeps the rig's data in dir instead of a new temporary folder: a second
// rig on the same dir is the same bot started again.
func Dir(dir string) Option { return func(c *config) { c.dir = dir } }

// Postgres puts the journal on PostgreSQL, in a fresh schema dropped when the
// test ends; the test skips when no server can be reached.
func Postgres() Option { return func(c *config) { c.postgres = true } }

// Journal opens the journal named (a SQLite file, or a PostgreSQL URL such as
// pgtest.Fresh's) instead of the rig's own: a rig on the journal of an earlier
// one is the same process started again.
func Journal(name string) Option { return func(c *config) { c.journal = name } }

// Over builds the rig over j, already open, instead of a journal of its own:
// another surface of the same process (the console beside the bot), or the same
// process with another sender. Its opener closes it.
func Over(j *journal.Journal) Option { return func(c *config) { c.over = j } }

// Parts changes the wiring's parts directly, once the rig has filled them in,
// for what no option names (Remote, Observe, the sweep's periods, a vault of
// the test's own).
func Parts(edit func(*wiring.Parts)) Option {
	return func(c *config) { c.partEdits = append(c.partEdits, edit) }
}

// New builds a rig for t. The journal is closed when t ends: what must stop
// before that (a bot serving over it) registers its own cleanup after New,
// since cleanups run last first.
func New(t testing.TB, opts ...Option) *Rig {
	t.Helper()
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.dir == "" {
		c.dir = t.TempDir()
	}
	if !c.transport {
		c.parts.Transport = "telegram"
	}
	p := c.policy
	if p == nil {
		var err error
		if p, err = policy.Parse(bytes.NewReader(countersign.DefaultPolicy)); err != nil {
			t.Fatalf("rig: the default policy: %v", err)
		}
	}
	for _, edit := range c.edits {
		edit(p)
	}
	ctx := context.Background()
	name := filepath.Join(c.dir, "journal.db")
	switch {
	case c.journal != "":
		name = c.journal
	case c.postgres:
		name = pgtest.Fresh(t)
	}
	j := c.over
	if j == nil {
		var err error
		if j, err = journal.Open(ctx, name, append([]journal.Option{journal.WithSeenKey(operator.SeenKey)}, c.jopts...)...); err != nil {
			t.Fatalf("rig: %v", err)
		}
		t.Cleanup(func() { j.Close() })
	}
	switch {
	case c.replica != "":
		if err := j.Join(ctx, c.parts.Transport, c.replica, c.lease); err != nil {
			t.Fatalf("rig: %v", err)
		}
	case c.own:
		if err := j.Own(ctx, c.parts.Transport); err != nil {
			t.Fatalf("rig: %v", err)
		}
	}
	v, err := vault.Open(filepath.Join(c.dir, "vault"))
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	files, err := filestore.Open(filepath.Join(c.dir, "files"))
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	c.parts.Journal, c.parts.Policy, c.parts.Vault, c.parts.Files = j, p, v, files
	if c.senderOf != nil {
		c.parts.Sender = c.senderOf(j)
	}
	for _, edit := range c.partEdits {
		edit(&c.parts)
	}
	a, err := wiring.New(c.parts)
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	return &Rig{Dir: c.dir, Journal: j, Policy: p, Vault: c.parts.Vault, Assembly: a}
}
