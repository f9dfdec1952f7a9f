package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/vault"
)

// TestFixtureReadsAsARealJournal checks that the bulk path writes what the journal
// and the vault read back: the counts per state, pending approvals that already
// have their cards, and an envelope for every unknown outcome.
func TestFixtureReadsAsARealJournal(t *testing.T) {
	pol, err := policy.Load("../../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := fixture{ops: 300, pending: 40, unknown: 7, operator: 1, approvers: []int64{1, 2}, ttl: pol.ApprovalTTL}
	ctx := context.Background()
	if err := build(ctx, dir, f, pol); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(ctx, filepath.Join(dir, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, c := range []struct {
		state journal.State
		want  int
	}{
		{journal.AwaitingApproval, f.pending},
		{journal.Unknown, f.unknown},
		{journal.Committed, f.ops - f.pending - f.unknown},
	} {
		if got, err := j.Count(ctx, journal.Filter{States: []journal.State{c.state}}); err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.state, got, err, c.want)
		}
	}
	if as, err := j.Uncarded(ctx, "telegram", time.Now()); err != nil || len(as) != 0 {
		t.Errorf("approvals without cards = %d, %v; want none (their cards were sent)", len(as), err)
	}
	pending, err := j.Operations(ctx, journal.Filter{States: []journal.State{journal.AwaitingApproval}, Limit: 1})
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending = %v, %v", pending, err)
	}
	a, err := j.LatestApproval(ctx, pending[0].ID)
	if err != nil || a.Decision != journal.Pending || !a.Expires.After(time.Now()) || a.PayloadSHA256 != pending[0].Payload.SHA256() {
		t.Errorf("approval of %s = %+v, %v; want pending, unexpired, bound to the payload", pending[0].ID, a, err)
	}
	if cards, err := j.Cards(ctx, a.ID); err != nil || len(cards) != len(f.approvers) {
		t.Errorf("cards of %s = %d, %v; want one per approver", a.ID, len(cards), err)
	}
	v, err := vault.Open(filepath.Join(dir, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := j.Operations(ctx, journal.Filter{States: []journal.State{journal.Unknown}})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range unknown {
		if e, path, err := v.Get(op.ID); err != nil || path != op.Envelope || !e.Unresolved() {
			t.Errorf("envelope of %s: %s (journal says %s), %v; want it there, unresolved", op.ID, path, op.Envelope, err)
		}
	}
}
