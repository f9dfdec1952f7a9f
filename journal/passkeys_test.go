package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/passkeytest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// approvedWithPasskey enrols alice's (42) passkey on j, asks one approval of a
// passkey, and records her vote with its receipt: a real passkey approval. It
// returns alice's signer too, for more receipts.
func approvedWithPasskey(t *testing.T, j *journal.Journal) (journal.Operation, *journal.Approval, *passkeytest.Signer) {
	t.Helper()
	alice := passkeytest.New(42)
	enrolPasskey(t, j, alice)
	op, a := askedStepUp(t, j, 1, policy.FactorPasskey)
	r := alice.Receipt(a.ID, a.PayloadSHA256)
	if _, err := j.DecideBallot(context.Background(), a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: &r}); err != nil {
		t.Fatalf("alice's passkey vote: %v", err)
	}
	return op, a, alice
}

// enrolPasskey enrols s from a one-time link, as the review page does.
func enrolPasskey(t *testing.T, j *journal.Journal, s *passkeytest.Signer) {
	t.Helper()
	ctx := context.Background()
	token := "link-" + string(s.ID)
	if err := j.NewPasskeyLink(ctx, s.User, token, time.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := j.FinishPasskeyLink(ctx, token, s.Credential()); err != nil {
		t.Fatal(err)
	}
}

// TestAnEnrolmentLinkWorksOnce: a link names its approver, keeps the
// registration begun from it, enrols one credential, and is dead after, as
// is an expired one; the journal keeps the token's hash, not the token.
func TestAnEnrolmentLinkWorksOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		c := newClock()
		j := open(t, name, c.Now)
		if err := j.NewPasskeyLink(ctx, 42, "tok-1", c.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if user, session, err := j.PasskeyLink(ctx, "tok-1"); err != nil || user != 42 || session != nil {
			t.Fatalf("PasskeyLink = %d, %q, %v; want 42, no session yet", user, session, err)
		}
		// The journal keeps the link's token hashed: a copy of the journal
		// (a backup) opens no enrolment.
		var kept string
		if err := raw(t, name).QueryRow("SELECT token_sha256 FROM passkey_links").Scan(&kept); err != nil || strings.Contains(kept, "tok-1") || len(kept) != 64 {
			t.Errorf("the link's token is kept as %q (%v); want its SHA-256 alone", kept, err)
		}
		if err := j.BeginPasskeyLink(ctx, "tok-1", []byte(`{"challenge":"x"}`)); err != nil {
			t.Fatal(err)
		}
		if _, session, _ := j.PasskeyLink(ctx, "tok-1"); string(session) != `{"challenge":"x"}` {
			t.Errorf("session %q, want the one begun", session)
		}
		s := passkeytest.New(42)
		if err := j.FinishPasskeyLink(ctx, "tok-1", passkeytest.New(43).Credential()); !errors.Is(err, journal.ErrLinkUsed) {
			t.Errorf("another user's credential through 42's link: %v, want ErrLinkUsed", err)
		}
		if err := j.FinishPasskeyLink(ctx, "tok-1", s.Credential()); err != nil {
			t.Fatal(err)
		}
		if err := j.FinishPasskeyLink(ctx, "tok-1", passkeytest.New(42).Credential()); !errors.Is(err, journal.ErrLinkUsed) {
			t.Errorf("the link again: %v, want ErrLinkUsed", err)
		}
		if _, _, err := j.PasskeyLink(ctx, "tok-1"); !errors.Is(err, journal.ErrLinkUsed) {
			t.Errorf("PasskeyLink of a used link: %v, want ErrLinkUsed", err)
		}
		cs, err := j.Passkeys(ctx, 42)
		if err != nil || len(cs) != 1 || string(cs[0].ID) != string(s.ID) || cs[0].Algorithm != -7 || cs[0].RPID != passkeytest.RPID {
			t.Fatalf("Passkeys(42) = %+v, %v; want the one enrolled", cs, err)
		}
		j.NewPasskeyLink(ctx, 42, "tok-2", c.Now().Add(time.Hour))
		c.Add(time.Hour)
		if err := j.FinishPasskeyLink(ctx, "tok-2", passkeytest.New(42).Credential()); !errors.Is(err, journal.ErrLinkUsed) {
			t.Errorf("an expired link: %v, want ErrLinkUsed", err)
		}
	})
}

// TestAPasskeyVoteKeepsItsReceiptAndCounter: an approval that asks a passkey
// takes no code and no tap alone; a receipt of it approves it, the vote
// keeps the factor, the credential its counter, and the receipt is chained
// after the vote (the trail verifies); the same receipt again, or on another
// approval, is refused, as are another approver's credential, a receipt of
// another payload, and a forged signature.
func TestAPasskeyVoteKeepsItsReceiptAndCounter(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		j := open(t, name, newClock().Now)
		alice, bob := passkeytest.New(42), passkeytest.New(43)
		enrolPasskey(t, j, alice)
		enrolPasskey(t, j, bob)
		_, a := askedStepUp(t, j, 1, policy.FactorPasskey)

		if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); !errors.Is(err, journal.ErrStepUpMissing) {
			t.Fatalf("a tap alone = %v, want ErrStepUpMissing", err)
		}
		ballot := func(by policy.UserID, r audit.PasskeyReceipt) error {
			_, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: by, Receipt: &r})
			return err
		}
		otherPayload := alice.Receipt(a.ID, strings.Repeat("ab", 32))
		forged := alice.Receipt(a.ID, a.PayloadSHA256)
		forged.Signature = bob.Receipt(a.ID, a.PayloadSHA256).Signature
		for _, tc := range []struct {
			name string
			by   policy.UserID
			r    audit.PasskeyReceipt
			want error
		}{
			{"a receipt of another payload", 42, otherPayload, journal.ErrPasskeyRefused},
			{"a signature of another key", 42, forged, journal.ErrPasskeyRefused},
			{"bob's credential for alice", 42, bob.Receipt(a.ID, a.PayloadSHA256), journal.ErrNoPasskey},
		} {
			if err := ballot(tc.by, tc.r); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		good := alice.Receipt(a.ID, a.PayloadSHA256)
		if err := ballot(42, good); err != nil {
			t.Fatalf("alice's receipt: %v", err)
		}
		got, err := j.Approval(ctx, a.ID)
		if err != nil || got.Decision != journal.DecideApprove || len(got.Votes) != 1 || got.Votes[0].StepUp != policy.FactorPasskey {
			t.Fatalf("approval %+v, %v; want approved by one vote given with a passkey", got, err)
		}
		cs, _ := j.Passkeys(ctx, 42)
		if len(cs) != 1 || cs[0].Counter != alice.Counter || cs[0].LastUsed.IsZero() {
			t.Errorf("alice's credential %+v; want counter %d and a last use", cs, alice.Counter)
		}
		_, b := askedStepUp(t, j, 1, policy.FactorPasskey)
		replay := good
		replay.Approval = b.ID
		if _, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: &replay}); !errors.Is(err, journal.ErrPasskeyRefused) {
			t.Errorf("a receipt of one approval put on another: %v, want ErrPasskeyRefused", err)
		}
		alice.Counter-- // the same counter again: a clone's next use, or a replay signed anew
		if _, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: ptr(alice.Receipt(b.ID, b.PayloadSHA256))}); !errors.Is(err, journal.ErrPasskeyCounter) {
			t.Errorf("a counter that did not move on: %v, want ErrPasskeyCounter", err)
		}
		alice.Counter -= 2 // a clone from before
		if _, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: ptr(alice.Receipt(b.ID, b.PayloadSHA256))}); !errors.Is(err, journal.ErrPasskeyCounter) {
			t.Errorf("a counter gone back: %v, want ErrPasskeyCounter", err)
		}

		var receipts []audit.Record
		j.AuditRecords(ctx, 1, func(r audit.Record) error {
			if r.Kind == audit.Receipt {
				receipts = append(receipts, r)
			}
			return nil
		})
		if len(receipts) != 1 || receipts[0].Ref != a.ID || !strings.Contains(string(receipts[0].Body), good.Signature) {
			t.Fatalf("receipt records %v; want alice's one, of %s", receipts, a.ID)
		}
		if rep, err := j.VerifyAudit(ctx); err != nil || rep.Fault != nil {
			t.Errorf("VerifyAudit = %+v, %v; want intact", rep, err)
		}

		// The receipt a vote keeps, changed or removed, is named by verify.
		db := raw(t, name)
		for _, tc := range []struct{ sql, want string }{
			{"UPDATE approval_votes SET receipt = replace(receipt, '\"by\":42', '\"by\":43') WHERE approval_id = '" + a.ID + "'", "differs from its record"},
			{"UPDATE approval_votes SET receipt = '' WHERE approval_id = '" + a.ID + "'", "keeps no passkey receipt"},
		} {
			if _, err := db.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			if f := verify(t, j).Fault; f == nil || f.Kind != audit.Receipt || !strings.Contains(f.Problem, tc.want) {
				t.Errorf("%s: fault %v, want a receipt's saying %q", tc.sql, f, tc.want)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// TestARemovedPasskeyApprovesNothingAndItsReceiptsStillVerify: a passkey
// removed (countersign approver passkey -remove) gives no vote from then on,
// and is no longer offered, yet its key stays among those an export carries,
// so the receipt it gave before still verifies offline with that key alone.
func TestARemovedPasskeyApprovesNothingAndItsReceiptsStillVerify(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		j := open(t, name, newClock().Now)
		_, a, alice := approvedWithPasskey(t, j)
		if err := j.RemovePasskeys(ctx, 42); err != nil {
			t.Fatal(err)
		}
		if err := j.RemovePasskeys(ctx, 42); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("removing again: %v, want ErrNotFound (none in use)", err)
		}
		if cs, err := j.Passkeys(ctx, 42); err != nil || len(cs) != 0 {
			t.Errorf("Passkeys(42) after removal = %+v, %v; want none in use", cs, err)
		}
		_, b := askedStepUp(t, j, 1, policy.FactorPasskey)
		if _, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: ptr(alice.Receipt(b.ID, b.PayloadSHA256))}); !errors.Is(err, journal.ErrNoPasskey) {
			t.Errorf("a receipt of a removed passkey: %v, want ErrNoPasskey", err)
		}

		ever, err := j.PasskeysEver(ctx)
		if err != nil || len(ever) != 1 || ever[0].Removed.IsZero() {
			t.Fatalf("PasskeysEver = %+v, %v; want alice's, marked removed", ever, err)
		}
		var kept audit.PasskeyReceipt
		j.AuditRecords(ctx, 1, func(r audit.Record) error {
			if r.Kind == audit.Receipt {
				return json.Unmarshal(r.Body, &kept)
			}
			return nil
		})
		if kept.Approval != a.ID {
			t.Fatalf("receipt record %+v; want the one of %s", kept, a.ID)
		}
		if err := audit.VerifyReceipt(kept, ever[0].Key()); err != nil {
			t.Errorf("the receipt given before the removal, with the key an export carries: %v", err)
		}
	})
}
