package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// unknownOp runs one send to an unknown outcome and returns its id.
func unknownOp(t *testing.T, h *harness, text string) string {
	t.Helper()
	_, opID := h.send("222", text)
	if r, _ := h.op.Decide(context.Background(), h.approval(opID), approverID, true); r.NextAction != "verify" {
		t.Fatalf("result = %+v, want verify", r)
	}
	return opID
}

func TestUnknownOutcomeWritesAnEnvelope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "Call me at +1 415 555 0100 or alice@example.com")
	op, _ := h.j.Operation(context.Background(), opID)
	if op.Envelope == "" {
		t.Fatal("the journal records no envelope path")
	}
	e, path, err := h.vault.Get(opID)
	if err != nil || path != op.Envelope {
		t.Fatalf("Get = %v at %s, want the note the journal names (%s)", err, path, op.Envelope)
	}
	if e.Status != envelope.StatusUnknown || e.NextAction != envelope.NextVerify || e.Target != "222" || e.PayloadSHA256 != op.PayloadSHA256 {
		t.Errorf("envelope = %+v", e)
	}
	data, _ := os.ReadFile(path)
	for _, leak := range []string{"415 555 0100", "alice@example.com"} {
		if strings.Contains(string(data), leak) {
			t.Errorf("the note holds %q:\n%s", leak, data)
		}
	}
	// Resolving through the operator resolves the note too.
	if _, err := h.op.Resolve(context.Background(), opID, false, "@alice"); err != nil {
		t.Fatal(err)
	}
	if e, _, _ := h.vault.Get(opID); e.Status != envelope.StatusNotCommitted || e.NextAction != envelope.NextRetryAllowed {
		t.Errorf("after /resolve not_delivered the note is %s / %s", e.Status, e.NextAction)
	}
}

func TestReconcileWritesAMissingEnvelope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "lost note")
	_, path, _ := h.vault.Get(opID)
	os.Remove(path) // a person deleted it, or the disk was full when it was due
	h.open()
	if err := h.op.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.op.Wait()
	if _, _, err := h.vault.Get(opID); err != nil {
		t.Errorf("after a restart the envelope is still missing: %v", err)
	}
}

func TestReconcileTakesAResolutionMadeInAnEditor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		status string
		want   journal.State
	}{{"committed", journal.Committed}, {"not_committed", journal.NotDelivered}} {
		t.Run(tt.status, func(t *testing.T) {
			h := newHarness(t, unknown)
			opID := unknownOp(t, h, "edited by hand")
			_, path, _ := h.vault.Get(opID)
			data, _ := os.ReadFile(path)
			edited := strings.Replace(string(data), "status: unknown", "status: "+tt.status, 1)
			os.WriteFile(path, []byte(edited), 0o600)
			resolved, err := h.op.Reconcile(context.Background())
			if err != nil || len(resolved) != 1 {
				t.Fatalf("Reconcile = %v, %v; want [%s]", resolved, err, opID)
			}
			ts, _ := h.j.Transitions(context.Background(), opID)
			last := ts[len(ts)-1]
			if last.To != tt.want || !strings.HasPrefix(last.Reason, operator.ReasonResolvedInVault) {
				t.Errorf("last transition = %+v, want %s by %s", last, tt.want, operator.ReasonResolvedInVault)
			}
		})
	}
}

func TestReconcileReportsABrokenNoteAndLeavesIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "broken by hand")
	_, path, _ := h.vault.Get(opID)
	broken := []byte("---\noperation_id: " + opID + "\nstatus: [oops\n")
	os.WriteFile(path, broken, 0o600)
	if _, err := h.op.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.logs.String(), filepath.Base(path)) {
		t.Errorf("the log does not name the broken note:\n%s", h.logs.String())
	}
	if data, _ := os.ReadFile(path); string(data) != string(broken) {
		t.Error("the broken note was rewritten")
	}
	if h.state(opID) != journal.Unknown {
		t.Errorf("state = %s, want still unknown", h.state(opID))
	}
}

func TestResolveRefusesAnAnswerTheVaultContradicts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "answered in the editor first")
	_, path, _ := h.vault.Get(opID)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(data), "status: unknown", "status: committed", 1)), 0o600)

	_, err := h.op.Resolve(context.Background(), opID, false, "@bob")
	if !errors.Is(err, operator.ErrNotResolvable) || !strings.Contains(err.Error(), "resolved the other way") {
		t.Fatalf("Resolve against the editor's answer = %v, want ErrNotResolvable naming the vault", err)
	}
	if h.state(opID) != journal.Unknown {
		t.Errorf("state = %s, want unknown until reconcile takes the editor's answer", h.state(opID))
	}
	if e, _, _ := h.vault.Get(opID); e.Status != envelope.StatusCommitted {
		t.Errorf("note status = %s, want the editor's committed left alone", e.Status)
	}
}

// Found by the chaos run: an operation resolved not delivered and then retried to
// a delivery kept a note saying "not_committed, retry-allowed", and the next
// session reading the vault would have sent it a second time.
func TestARetryThatDeliversSaysSoInTheNote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown, nil)
	ctx := context.Background()
	opID := unknownOp(t, h, "the retried one")
	if _, err := h.op.Resolve(ctx, opID, false, "@alice"); err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Retry(ctx, opID)
	if err != nil || r.Status != "pending" {
		t.Fatalf("Retry = %+v, %v; want pending", r, err)
	}
	if r, err = h.op.Decide(ctx, h.approval(opID), approverID, true); err != nil || r.SideEffect != "committed" {
		t.Fatalf("Decide = %+v, %v; want committed", r, err)
	}
	e, _, err := h.vault.Get(opID)
	if err != nil || e.Status != envelope.StatusCommitted || e.NextAction != envelope.NextNone {
		t.Errorf("the note after the retry delivered: %+v, %v; want committed, next action none", e, err)
	}
}

// Found by the chaos run (seed 14 delivered one /send twice): an operation resolved
// not delivered, retried, and unknown again kept the note of its first unknown,
// resolved not_committed, until its new note was written. A restart after the
// retry's request left (no new note yet), or a new note the full disk refused, let
// Reconcile take that old answer for the new attempt: the operation went back to
// not_delivered, and a /retry (a replay of the first one, after the restart) sent it
// a second time. A note written for an earlier attempt answers nothing about a
// later one: the later unknown stays unknown, with a note of its own, and a
// person's "it arrived" is taken, not refused as contradicting the old note.
func TestANoteOfAnEarlierAttemptDoesNotResolveALaterUnknown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		again func(t *testing.T, h *harness, opID string, old []byte)
		// path is the states of the retry, from not_delivered on.
		path []journal.State
		// rewritten: the unknown has its own note before anyone answers.
		rewritten bool
	}{
		{
			name: "the process stopped while the retry was sending",
			again: func(t *testing.T, h *harness, opID string, _ []byte) {
				ctx := context.Background()
				if _, err := h.j.Decide(ctx, h.approval(opID), journal.DecideApprove, approverID); err != nil {
					t.Fatal(err)
				}
				if err := h.j.Move(ctx, opID, journal.Move{From: A, To: C, Reason: "attempt 2", StartAttempt: true}); err != nil {
					t.Fatal(err)
				}
				h.sender.Send(ctx, tools.Message{Target: "222", Text: "sent twice?"}) // it left, and arrived
				h.open()
				if err := h.op.Resume(ctx); err != nil {
					t.Fatal(err)
				}
				h.op.Wait()
			},
			path: []journal.State{AA, A, C, U}, rewritten: true,
		},
		{
			name: "the retry's outcome was unknown and its note could not be written",
			again: func(t *testing.T, h *harness, opID string, old []byte) {
				ctx := context.Background()
				if r, _ := h.op.Decide(ctx, h.approval(opID), approverID, true); r.NextAction != action.NextVerify {
					t.Fatalf("the retry = %+v, want an unknown outcome", r)
				}
				// What a full disk leaves: the first unknown's note, resolved.
				_, path, _ := h.vault.Get(opID)
				if err := os.WriteFile(path, old, 0o600); err != nil {
					t.Fatal(err)
				}
				if _, err := h.op.Reconcile(ctx); err != nil {
					t.Fatal(err)
				}
			},
			path: []journal.State{AA, A, C, U}, rewritten: true,
		},
		{
			name: "its note could not be written, and a person answers before the next sweep",
			again: func(t *testing.T, h *harness, opID string, old []byte) {
				if r, _ := h.op.Decide(context.Background(), h.approval(opID), approverID, true); r.NextAction != action.NextVerify {
					t.Fatalf("the retry = %+v, want an unknown outcome", r)
				}
				_, path, _ := h.vault.Get(opID)
				if err := os.WriteFile(path, old, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			path: []journal.State{AA, A, C, U},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, unknown)
			ctx := context.Background()
			opID := unknownOp(t, h, "sent twice?")
			if _, err := h.op.Resolve(ctx, opID, false, "@alice"); err != nil {
				t.Fatal(err)
			}
			_, path, _ := h.vault.Get(opID)
			old, _ := os.ReadFile(path)
			before := len(h.states(opID))
			if r, err := h.op.Retry(ctx, opID); err != nil || r.Status != action.StatusPending {
				t.Fatalf("Retry = %+v, %v; want pending", r, err)
			}
			tt.again(t, h, opID, old)

			if got := h.states(opID)[before:]; fmtStates(got) != fmtStates(tt.path) {
				t.Errorf("path of the retry = %v, want %v, and nothing after unknown", got, tt.path)
			}
			ts, _ := h.j.Transitions(ctx, opID)
			for _, tr := range ts {
				if strings.HasPrefix(tr.Reason, operator.ReasonResolvedInVault) {
					t.Errorf("transition %+v: the first attempt's note resolved the second", tr)
				}
			}
			if _, err := h.op.Retry(ctx, opID); !errors.Is(err, operator.ErrNotRetryable) {
				t.Errorf("Retry of the second unknown = %v, want ErrNotRetryable: nothing is resent on the old answer", err)
			}
			if e, _, err := h.vault.Get(opID); tt.rewritten && (err != nil || !e.Unresolved() || e.Attempts != 2) {
				t.Errorf("the note after the second unknown = %+v, %v; want unresolved, of attempt 2", e, err)
			}
			if r, err := h.op.Resolve(ctx, opID, true, "@alice"); err != nil || r.SideEffect != action.SideEffectCommitted {
				t.Fatalf("Resolve delivered = %+v, %v; want committed", r, err)
			}
			if e, _, _ := h.vault.Get(opID); e.Status != envelope.StatusCommitted {
				t.Errorf("the note after it arrived = %s, want committed", e.Status)
			}
			if n := len(h.sender.Sent()); n != 2 {
				t.Errorf("sends = %d, want 2 (the first, not delivered, and the retry)", n)
			}
		})
	}
}

// A person may resolve an unknown outcome while its note is being written
// (another replica's tap, `countersign vault resolve`): the resolution finds no note to
// resolve, and the note, written after, must not say unknown for an operation
// the journal has resolved. Whichever comes second brings the note up to the
// journal.
func TestANoteWrittenAsAResolutionCameSaysWhatTheJournalSays(t *testing.T) {
	t.Parallel()
	for _, delivered := range []bool{true, false} {
		t.Run(fmt.Sprint("delivered=", delivered), func(t *testing.T) {
			h := newHarness(t, unknown)
			ctx := context.Background()
			_, opID := h.send("222", "resolved while its note is written")
			// Another process: a journal and an operator of its own, on its own clock.
			other := h.beside(rigtest.Sender(h.sender), rigtest.Transport(""))
			j, beside := other.Journal, other.Operator
			var fired atomic.Bool
			resolveNow := func() {
				// As soon as the outcome is journaled unknown, before its note is
				// written: the resolver finds no note.
				op, err := j.Operation(ctx, opID)
				if err != nil || op.State != journal.Unknown || op.Envelope != "" || !fired.CompareAndSwap(false, true) {
					return
				}
				if _, err := beside.Resolve(ctx, opID, delivered, "@bob"); err != nil {
					t.Errorf("Resolve beside: %v", err)
				}
			}
			h.clock.onNow.Store(&resolveNow)
			h.op.Decide(ctx, h.approval(opID), approverID, true)
			h.clock.onNow.Store(nil)
			if !fired.Load() {
				t.Fatal("the resolution never came between the unknown outcome and its note")
			}

			op, _ := h.j.Operation(ctx, opID)
			e, _, err := h.vault.Get(opID)
			if err != nil {
				t.Fatalf("the note: %v", err)
			}
			want := envelope.StatusNotCommitted
			if delivered {
				want = envelope.StatusCommitted
			}
			if e.Status != want {
				t.Errorf("journal %s, note %s; want the note to say %s", op.State, e.Status, want)
			}
		})
	}
}

// The note of an unknown outcome is written once an attempt: its own write and
// Reconcile's may both find it missing (the outcome is journaled first), and
// the later one takes the note that is there, which an agent may have read or
// a person begun to edit since, rather than writing it again.
func TestAnUnknownOutcomesNoteIsWrittenOnceAnAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "written once")
	_, path, err := h.vault.Get(opID)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	edited := strings.Replace(string(data), "- Excerpt:", "- Looked at by a person: in the chat's history\n- Excerpt:", 1)
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Minute) // a note written again would say so in its times
	if err := h.op.WriteEnvelope(context.Background(), opID); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != edited {
		t.Errorf("the note was written again:\n%s\nwant as it was:\n%s", got, edited)
	}
	if op, _ := h.j.Operation(context.Background(), opID); op.Envelope != path {
		t.Errorf("the journal records the note at %q, want %q", op.Envelope, path)
	}
}

// The note is written once an attempt across processes too: the leader's write
// and that of another process on the vault's folder (a replica that led a
// moment before, `countersign vault resolve` replacing an earlier attempt's
// note) may both find it missing. Here the other process writes it, and a
// person begins to edit it, just as this one has found it missing and is about
// to write it: this one takes the note that is there, as it stands, and
// journals it.
func TestAnUnknownOutcomesNoteIsWrittenOnceAcrossProcesses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	ctx := context.Background()
	opID := unknownOp(t, h, "written once by two processes")
	_, path, err := h.vault.Get(opID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil { // missing: the disk was full when it was due
		t.Fatal(err)
	}
	// Another process: a journal, a vault and an operator of its own on the
	// same folder, its clock a month on, so that its note is a month's folder on.
	later := newClock()
	later.Advance(31 * 24 * time.Hour)
	other := h.beside(rigtest.Clock(later)).Operator
	var fired atomic.Bool
	var theirs string
	var edited []byte
	writeBeside := func() {
		// At this process's first look at the clock in its write: after it
		// found the note missing, before it writes one.
		if !fired.CompareAndSwap(false, true) {
			return
		}
		if err := other.WriteEnvelope(ctx, opID); err != nil {
			t.Errorf("the other process's write: %v", err)
			return
		}
		var err error
		if _, theirs, err = h.vault.Get(opID); err != nil {
			t.Errorf("the other process's note: %v", err)
			return
		}
		data, _ := os.ReadFile(theirs)
		edited = []byte(strings.Replace(string(data), "- Excerpt:", "- Looked at by a person: in the chat's history\n- Excerpt:", 1))
		if err := os.WriteFile(theirs, edited, 0o600); err != nil {
			t.Error(err)
		}
	}
	h.clock.onNow.Store(&writeBeside)
	err = h.op.WriteEnvelope(ctx, opID)
	h.clock.onNow.Store(nil)
	if err != nil {
		t.Fatalf("WriteEnvelope: %v", err)
	}
	if !fired.Load() || theirs == "" {
		t.Fatal("the other process did not write the note between this one's look and its write")
	}
	if got, _ := os.ReadFile(theirs); string(got) != string(edited) {
		t.Errorf("the other process's note was written over:\n%s\nwant as it was:\n%s", got, edited)
	}
	if _, path, err := h.vault.Get(opID); err != nil || path != theirs {
		t.Errorf("the vault holds %q (%v), want the other process's note alone, %q", path, err, theirs)
	}
	if op, _ := h.j.Operation(ctx, opID); op.Envelope != theirs {
		t.Errorf("the journal records the note at %q, want %q", op.Envelope, theirs)
	}
}
