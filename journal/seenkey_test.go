package journal_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// An operation is found by the seen key of its payload as it reads now: the
// key is kept when it is created and replaced with its payload (an edit); an
// operation whose key is not known (written by a journal opened without
// WithSeenKey, or whose payload such a journal replaced, so that no key goes
// stale) is found by any key, for the duplicate check to compare it whole.
func TestOperationsAreFoundByTheirSeenKey(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testOperationsAreFoundByTheirSeenKey)
}

func testOperationsAreFoundByTheirSeenKey(t *testing.T, name string) {
	ctx := context.Background()
	key := func(p action.Payload) string { return "key of " + p.Text }
	keyed := openWith(t, name, journal.WithSeenKey(key))
	unkeyed := openWith(t, name)
	found := func(k string) []string {
		t.Helper()
		ops, err := keyed.Operations(ctx, journal.Filter{Target: "222", SeenKey: k})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range ops {
			ids = append(ids, o.ID)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }

	edited, a := askedFor(t, keyed, 1) // "hi", then edited below
	_, hi := newOp(t, keyed)
	_, unknown := newOp(t, unkeyed)
	if got, want := found("key of hi"), sorted(edited.ID, hi.ID, unknown.ID); !slices.Equal(got, want) {
		t.Errorf("key of hi: %v, want the two of that key and the one of no key %v", got, want)
	}
	if got, want := found("key of bye"), sorted(unknown.ID); !slices.Equal(got, want) {
		t.Errorf("key of bye: %v, want only the one of no key %v", got, want)
	}

	p := action.Payload{Action: "send_message", Target: "222", Text: "hi, corrected"}
	if _, err := keyed.EditPayload(ctx, a.ID, p, 42, keyed.NewApproval(edited, 7, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, want := found("key of hi, corrected"), sorted(edited.ID, unknown.ID); !slices.Equal(got, want) {
		t.Errorf("after the edit, key of hi, corrected: %v, want %v", got, want)
	}
	if got, want := found("key of hi"), sorted(hi.ID, unknown.ID); !slices.Equal(got, want) {
		t.Errorf("after the edit, key of hi: %v, want %v: the edited one no longer reads so", got, want)
	}

	// Edited again by a process that keeps no keys: its key is not known
	// from then on, never the one of the payload it replaced.
	again, err := unkeyed.LatestApproval(ctx, edited.ID)
	if err != nil {
		t.Fatal(err)
	}
	p.Text = "hi, corrected twice"
	if _, err := unkeyed.EditPayload(ctx, again.ID, p, 42, unkeyed.NewApproval(edited, 7, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, want := found("key of hi, corrected"), sorted(edited.ID, unknown.ID); !slices.Equal(got, want) {
		t.Errorf("edited without keys, key of hi, corrected: %v, want %v (the edited one's key not known)", got, want)
	}
	if got, want := found("key of anything"), sorted(edited.ID, unknown.ID); !slices.Equal(got, want) {
		t.Errorf("edited without keys, key of anything: %v, want %v", got, want)
	}
}
