package operator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
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
	h := newHarness(t, unknown).withVault()
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
	h := newHarness(t, unknown).withVault()
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
	for _, tt := range []struct {
		status string
		want   journal.State
	}{{"committed", journal.Committed}, {"not_committed", journal.NotDelivered}} {
		t.Run(tt.status, func(t *testing.T) {
			h := newHarness(t, unknown).withVault()
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
	h := newHarness(t, unknown).withVault()
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
	h := newHarness(t, unknown).withVault()
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
	h := newHarness(t, unknown, nil).withVault()
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
