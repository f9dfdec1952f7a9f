package operator_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// stallSender stands for a sender whose process stalls on its way to the wire
// (a pause, the rate limiter's wait, a database out of reach): each send waits
// until release, then, as telegram.Sender does, checks the request's fence right
// before the write, and only then delivers. It counts the sends written.
type stallSender struct {
	arrived chan struct{}
	release chan struct{}
	written chan tools.Message
}

func newStallSender() *stallSender {
	return &stallSender{arrived: make(chan struct{}, 4), release: make(chan struct{}), written: make(chan tools.Message, 4)}
}

func (s *stallSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	s.arrived <- struct{}{}
	<-s.release
	if err := action.CheckFence(ctx); err != nil {
		return tools.Delivery{}, err
	}
	s.written <- m
	return tools.Delivery{ChatID: m.Target, MessageID: 900}, nil
}

// A replica past its lease never sends. r1 moves a commit to committing and
// stalls before writing it; its lease runs out, r2 makes the commit unknown, a
// person truthfully says it never arrived, and the retry they approve is sent by
// r2. When r1 resumes, its request is fenced: nothing is written, nothing is
// recorded over r2's delivery, and the message arrived once.
func TestAReplicaPastItsLeaseNeverSends(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	stall := newStallSender()
	s2 := &scriptSender{}
	r1, _ := rs.start("r1", stall, false)
	r2, j2 := rs.start("r2", s2, false)

	id, apID := askAt(t, r1, "sent once, whoever resumes")
	outcome := make(chan action.Result, 1)
	go func() {
		r, err := r1.Decide(ctx, apID, approverID, true)
		if err != nil {
			t.Error(err)
		}
		outcome <- r
	}()
	<-stall.arrived // committing is journaled; r1 is stalled before its write

	rs.clock.Advance(11 * time.Second)
	if moved, err := j2.RecoverExpired(ctx, transport); err != nil || len(moved) != 1 {
		t.Fatalf("r2 RecoverExpired = %v, %v; want r1's commit", moved, err)
	}
	if _, err := r2.Resolve(ctx, id, false, "someone who looked"); err != nil {
		t.Fatal(err)
	}
	if r, err := r2.Retry(ctx, id); err != nil || r.Status != action.StatusPending {
		t.Fatalf("Retry = %+v, %v; want pending", r, err)
	}
	a, err := r2.PendingApproval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := r2.Decide(ctx, a.ID, approverID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("r2's commit of the retry = %+v, %v; want succeeded", r, err)
	}

	close(stall.release) // r1 resumes
	var got action.Result
	select {
	case got = <-outcome:
	case <-time.After(10 * time.Second):
		t.Fatal("r1 never came back from its stalled commit")
	}
	select {
	case m := <-stall.written:
		t.Fatalf("r1 wrote %q after its claim was taken: a second delivery", m.Text)
	default:
	}
	if n := len(s2.Sent()); n != 1 {
		t.Errorf("r2 sends = %d, want 1", n)
	}
	if got.Status != action.StatusSucceeded || got.Evidence == nil || got.Evidence.MessageIDs[0] != 101 {
		t.Errorf("r1's result = %+v, want r2's delivery (message 101) as the journal has it", got)
	}
	ts, _ := j2.Transitions(ctx, id)
	var path []string
	committed := 0
	for _, tr := range ts {
		path = append(path, string(tr.To)+":"+tr.Reason)
		if tr.To == journal.Committed {
			committed++
		}
	}
	if committed != 1 || ts[len(ts)-1].To != journal.Committed || !hasReason(ts, journal.ReasonLeaseExpired) {
		t.Errorf("path = %v; want one delivery, after r1's commit was made unknown by %s", path, journal.ReasonLeaseExpired)
	}
	as, _ := j2.Attempts(ctx, id)
	if len(as) != 2 || as[0].Outcome != "interrupted" || as[1].Outcome != "committed" {
		t.Errorf("attempts = %+v, want r1's interrupted, then r2's committed", as)
	}
}

func hasReason(ts []journal.Transition, reason string) bool {
	for _, tr := range ts {
		if tr.Reason == reason {
			return true
		}
	}
	return false
}
