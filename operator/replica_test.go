package operator_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// hangSender is a sender whose sends wait until release, then deliver; it
// counts every send that reached it.
type hangSender struct {
	mu      sync.Mutex
	sent    int
	arrived chan struct{} // one value per send that reached it
	release chan struct{}
}

func newHangSender() *hangSender {
	return &hangSender{arrived: make(chan struct{}, 16), release: make(chan struct{})}
}

func (s *hangSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	s.mu.Lock()
	s.sent++
	n := s.sent
	s.mu.Unlock()
	s.arrived <- struct{}{}
	<-s.release
	return tools.Delivery{ChatID: m.Target, MessageID: int64(500 + n)}, nil
}

func (s *hangSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// replicas are operators on one journal, each the replica of its name, sharing a
// fake clock and a vault folder, as processes behind one load balancer do.
type replicas struct {
	t     *testing.T
	file  string
	clock *fakeClock
	vault *vault.Vault
	logs  syncBuffer

	mu       sync.Mutex
	observed map[string][]operator.Attempt // the attempts each replica's Observe heard
}

func (r *replicas) attempts(name string) []operator.Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]operator.Attempt(nil), r.observed[name]...)
}

func newReplicas(t *testing.T) *replicas {
	t.Helper()
	dir := t.TempDir()
	r := &replicas{t: t, file: filepath.Join(dir, "journal.db"), clock: newClock()}
	if os.Getenv("COUNTERSIGN_OPERATOR_JOURNAL") == "postgres" {
		r.file = pgtest.Fresh(t)
	}
	v, err := vault.Open(filepath.Join(dir, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	r.vault = v
	return r
}

// start opens the journal as replica name, with sender as the world's edge (nil:
// a sender that delivers every message), writing notes to the shared vault.
func (r *replicas) start(name string, sender tools.Sender, remote bool) (*operator.Operator, *journal.Journal) {
	r.t.Helper()
	return r.startWith(name, sender, remote, r.vault)
}

// startWith is start with a vault of the replica's own.
func (r *replicas) startWith(name string, sender tools.Sender, remote bool, v *vault.Vault) (*operator.Operator, *journal.Journal) {
	r.t.Helper()
	if sender == nil {
		sender = &scriptSender{}
	}
	rig := rigtest.New(r.t, rigtest.Journal(r.file), rigtest.JournalOptions(journal.WithClock(r.clock.Now), journal.WithLeaseClock(r.clock.Now)),
		rigtest.Policy(testPolicy(r.t)), rigtest.Sender(sender), rigtest.Clock(r.clock),
		rigtest.Parts(func(w *wiring.Parts) {
			w.Vault, w.Remote, w.WatchEvery, w.SweepEvery = v, remote, 5*time.Millisecond, time.Hour
			w.Rand = func() float64 { return 0.5 }
			w.Logger = slog.New(slog.NewTextHandler(&r.logs, nil)).With("replica", name)
			w.Observe = func(a operator.Attempt) {
				r.mu.Lock()
				defer r.mu.Unlock()
				if r.observed == nil {
					r.observed = map[string][]operator.Attempt{}
				}
				r.observed[name] = append(r.observed[name], a)
			}
		}))
	if name != "" {
		if err := rig.Journal.Join(context.Background(), transport, name, 10*time.Second); err != nil {
			r.t.Fatal(err)
		}
	}
	return rig.Operator, rig.Journal
}

// sweep runs o's Sweep until the test ends.
func sweep(t *testing.T, o *operator.Operator) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.Sweep(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A replica that stops while its request is out (here: it stops renewing, its
// request hangs) leaves the commit to the others. Another replica waits out the
// lease, moves it to unknown with lease_expired, writes the note (it leads),
// and tells whoever asked; nothing is sent again. When the stalled replica's
// answer comes after all, it records the delivery over the unknown.
func TestAnotherReplicaMakesAStalledCommitUnknown(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	hang := newHangSender()
	r1, j1 := rs.start("r1", hang, false)
	r2, j2 := rs.start("r2", nil, false)
	told := make(chan action.Result, 4)
	onOutcome(r2, func(id string, r action.Result) { told <- r })

	id, apID := askAt(t, r1, "on the wire when r1 stalls")
	outcome := make(chan action.Result, 1)
	go func() {
		r, err := r1.Decide(ctx, apID, approverID, true)
		if err != nil {
			t.Error(err)
		}
		outcome <- r
	}()
	<-hang.arrived // the request is out; r1 renews nothing (its Sweep is not running)

	sweep(t, r2)
	waitUntil(t, "r2 leads", func() bool { ok, _ := r2.Leading(); return ok })
	if op, _ := j2.Operation(ctx, id); op.State != journal.Committing {
		t.Fatalf("within the lease the commit is %s, want committing: r2 took a live commit", op.State)
	}
	rs.clock.Advance(11 * time.Second)
	var r action.Result
	select {
	case r = <-told:
	case <-time.After(10 * time.Second):
		t.Fatal("r2 told nobody of the commit r1 left on the wire")
	}
	if r.SideEffect != action.SideEffectUnknown || r.NextAction != action.NextVerify {
		t.Errorf("told %+v, want unknown / verify", r)
	}
	ts, _ := j2.Transitions(ctx, id)
	if last := ts[len(ts)-1]; last.From != journal.Committing || last.To != journal.Unknown || last.Reason != journal.ReasonLeaseExpired {
		t.Errorf("last transition %+v, want committing -> unknown (%s)", last, journal.ReasonLeaseExpired)
	}
	waitUntil(t, "the leader wrote the note", func() bool {
		e, _, err := rs.vault.Get(id)
		return err == nil && e.Unresolved()
	})
	if n := hang.count(); n != 1 {
		t.Errorf("sends = %d, want 1: nothing is sent again", n)
	}
	if got := rs.attempts("r2"); len(got) != 1 || !got[0].Interrupted || got[0].Outcome != journal.Unknown {
		t.Errorf("r2 observed %+v, want r1's attempt, interrupted, unknown (for its metrics)", got)
	}

	// r1's answer comes after all: the delivery is recorded over the unknown.
	close(hang.release)
	got := <-outcome
	if got.Status != action.StatusSucceeded || got.Evidence == nil {
		t.Errorf("r1's late outcome = %+v, want succeeded with evidence", got)
	}
	op, _ := j1.Operation(ctx, id)
	ts, _ = j1.Transitions(ctx, id)
	if last := ts[len(ts)-1]; op.State != journal.Committed || last.From != journal.Unknown || last.Reason != operator.ReasonLateAnswer {
		t.Errorf("after the late answer: %s, last %+v; want committed from unknown (%s)", op.State, last, operator.ReasonLateAnswer)
	}
	if e, _, err := rs.vault.Get(id); err != nil || e.Unresolved() {
		t.Errorf("the note after the late answer = %+v, %v; want it resolved as delivered", e, err)
	}
}

// An operation approved by a process that is no replica (countersign mcp beside them) is
// free to every replica: both watches go for it, the journal's compare-and-set
// lets one commit, and it is sent once.
func TestTwoReplicasRunAFreeOperationOnce(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	s1, s2 := &scriptSender{}, &scriptSender{}
	r1, j1 := rs.start("r1", s1, false)
	r2, _ := rs.start("r2", s2, false)
	mcp, _ := rs.start("", nil, true)
	for i := range 10 {
		approvedBeside(t, mcp, "free to any replica "+string(rune('a'+i)))
	}
	sweep(t, r1)
	sweep(t, r2)
	waitUntil(t, "every operation committed", func() bool {
		n, _ := j1.Count(ctx, journal.Filter{States: []journal.State{journal.Committed}})
		return n == 10
	})
	if n := len(s1.Sent()) + len(s2.Sent()); n != 10 {
		t.Errorf("sends = %d (r1 %d, r2 %d), want 10: one per operation", n, len(s1.Sent()), len(s2.Sent()))
	}
	ops, _ := j1.Operations(ctx, journal.Filter{})
	for _, op := range ops {
		ts, _ := j1.Transitions(ctx, op.ID)
		committing := 0
		for _, tr := range ts {
			if tr.To == journal.Committing {
				committing++
			}
		}
		if committing != 1 {
			t.Errorf("%s went to committing %d times", op.ID, committing)
		}
	}
}

// askedAtR2 is a send asked at replica r2, whose surface heard the request,
// beside a leader r1 whose events are recorded and a process (mcp) that makes
// the leader's watch pass whole (wholeWatch).
type askedAtR2 struct {
	rs                 *replicas
	leader, asker, mcp *operator.Operator
	lj                 *journal.Journal
	rec                *recorder
	opID               string
}

func askAtR2(t *testing.T, text string) askedAtR2 {
	t.Helper()
	s := askedAtR2{rs: newReplicas(t)}
	ctx := context.Background()
	s.leader, s.lj = s.rs.start("r1", nil, false)
	s.asker, _ = s.rs.start("r2", nil, false)
	s.mcp, _ = s.rs.start("", nil, true)
	s.rec = record(t, s.leader, s.lj)
	s.asker.Subscribe(func(operator.Event) {}) // a surface heard it, as a request's does
	sweep(t, s.leader)
	waitUntil(t, "r1 leads", func() bool { ok, _ := s.leader.Leading(); return ok })
	task, err := s.asker.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Surface: transport})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.asker.Call(ctx, task.ID, callSend("222", text))
	if err != nil {
		t.Fatal(err)
	}
	s.opID = r.OperationID
	return s
}

// published reports whether the leader published r2's approval.
func (s askedAtR2) published() bool {
	for _, ev := range s.rec.events() {
		if ev.Kind == operator.ApprovalNeeded && ev.Operation.ID == s.opID {
			return true
		}
	}
	return false
}

// An approval asked by a live replica is that replica's to show: the leader does
// not publish it late within a lease, and does after one (the replica that asked
// may have died before it showed the cards).
func TestTheLeaderShowsAnotherReplicasApprovalOnlyAfterALease(t *testing.T) {
	t.Parallel()
	s := askAtR2(t, "asked at r2")
	s.rs.clock.Advance(9 * time.Second)
	wholeWatch(t, s.mcp, s.lj) // of the leader, with r2's approval there
	if s.published() {
		t.Fatalf("the leader published r2's fresh approval: %v", s.rec.heardList())
	}
	s.rs.clock.Advance(2 * time.Second)
	waitUntil(t, "the leader published r2's approval after the lease", s.published)
}

// A replica still showing its approval (its cards held up behind a chat's
// pace, or a slow send) says so, and the leader leaves it alone while it does,
// though its request is past a lease: a second card for each approver is what
// the leader would show. Once the replica stops saying so (it died with the
// cards half out), the leader shows it after a lease.
func TestTheLeaderLeavesAnApprovalAReplicaStillShows(t *testing.T) {
	t.Parallel()
	s := askAtR2(t, "asked at r2, its cards slow")
	ctx := context.Background()
	a, err := s.asker.PendingApproval(ctx, s.opID)
	if err != nil {
		t.Fatal(err)
	}
	if every := s.asker.ShowingEvery(); every <= 0 || every > s.lj.Lease()/2 {
		t.Errorf("ShowingEvery = %v, want a fraction of the %v lease", every, s.lj.Lease())
	}
	for range 3 { // 18 s since the request, never a lease since r2 last said so
		s.rs.clock.Advance(6 * time.Second)
		if err := s.asker.StillShowing(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		wholeWatch(t, s.mcp, s.lj)
		if s.published() {
			t.Fatalf("the leader published the approval r2 still shows: %v", s.rec.heardList())
		}
	}
	// Another run's word does not renew r2's mark.
	renewed := s.rs.clock.Now()
	s.rs.clock.Advance(time.Second)
	if err := s.leader.StillShowing(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.lj.Approval(ctx, a.ID); got.ShownBy != a.ShownBy || !got.Shown.Equal(renewed) {
		t.Errorf("mark = %s at %v, want r2's (%s), renewed at %v", got.ShownBy, got.Shown, a.ShownBy, renewed)
	}
	s.rs.clock.Advance(10 * time.Second)
	waitUntil(t, "the leader published the approval a lease after r2 last said it shows it", s.published)
}

// approvedBeside asks for a commit in a process that is no replica, and approves
// it there: it waits, approved and free, for a replica to run it.
func approvedBeside(t *testing.T, remote *operator.Operator, text string) string {
	t.Helper()
	ctx := context.Background()
	task, err := remote.StartTask(ctx, journal.Task{Requester: operatorID, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := remote.Call(ctx, task.ID, callSend("222", text))
	if err != nil {
		t.Fatal(err)
	}
	a, err := remote.PendingApproval(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Decide(ctx, a.ID, approverID, true); err != nil {
		t.Fatal(err)
	}
	return r.OperationID
}

// A replica that takes the lead does the leader's slow work at once: a note
// resolved by hand while no live replica led resolves its operation now, not a
// sweep period later. The lead reaches r2 only after its first sweep is over
// (a third process holds it until then), so what resolves the operation is the
// lead's own sweep, not the first one.
func TestANewLeaderReconcilesAtOnce(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	r1, _ := rs.start("r1", &scriptSender{script: []error{unknown}}, false)
	stop1, done1 := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() { defer close(ended); r1.Sweep(stop1) }()
	waitUntil(t, "r1 leads", func() bool { ok, _ := r1.Leading(); return ok })
	id, apID := askAt(t, r1, "unknown, then resolved in an editor")
	if got, err := r1.Decide(ctx, apID, approverID, true); err != nil || got.SideEffect != action.SideEffectUnknown {
		t.Fatalf("Decide = %+v, %v; want an unknown outcome", got, err)
	}
	done1()
	<-ended // r1 gives up the lead, and the process below takes it
	_, r0 := rs.start("r0", nil, false)
	if ok, err := r0.Lead(ctx, transport); !ok || err != nil {
		t.Fatalf("r0 Lead = %v, %v; want the lead r1 gave up", ok, err)
	}
	if _, err := rs.vault.Resolve(id, true, "an editor", rs.clock.Now()); err != nil {
		t.Fatal(err)
	}
	mcp, _ := rs.start("", nil, true)
	approvedBeside(t, mcp, "free, for r2's watch")
	s2 := &scriptSender{}
	r2, j2 := rs.start("r2", s2, false)
	sweep(t, r2) // its sweep period is an hour
	waitUntil(t, "r2's first watch, after its first sweep, ran the free operation", func() bool { return len(s2.Sent()) == 1 })
	if leads, _ := r2.Leading(); leads {
		t.Fatal("r2 leads while r0 holds the lead")
	}
	if op, _ := j2.Operation(ctx, id); op.State != journal.Unknown {
		t.Fatalf("operation %s before r2 leads, want it unknown still", op.State)
	}
	if err := r0.Resign(transport); err != nil { // r0 stops
		t.Fatal(err)
	}
	waitUntil(t, "r2 took the lead and resolved the operation from its note", func() bool {
		op, _ := j2.Operation(ctx, id)
		return op.State == journal.Committed
	})
	ts, _ := j2.Transitions(ctx, id)
	if last := ts[len(ts)-1]; !strings.HasPrefix(last.Reason, operator.ReasonResolvedInVault) {
		t.Errorf("last transition %+v, want %s", last, operator.ReasonResolvedInVault)
	}
}

// A live replica's work is its own: an operation it approved is not run by
// another replica's watch while it holds it, and the commit is its own.
func TestAReplicaLeavesALiveReplicasWorkAlone(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	s1, s2 := &scriptSender{}, &scriptSender{}
	r1, j1 := rs.start("r1", s1, false)
	r2, _ := rs.start("r2", s2, false)
	mcp, _ := rs.start("", nil, true)
	id, apID := askAt(t, r1, "approved at r1")
	d, err := r1.Record(ctx, apID, approverID, true) // approved, its commit next, here
	if err != nil {
		t.Fatal(err)
	}
	sweep(t, r2)
	wholeWatch(t, mcp, j1) // of r2, with r1's approved operation there
	if op, _ := j1.Operation(ctx, id); op.State != journal.Approved {
		t.Fatalf("r1's approved operation is %s at r2's hands, want it left approved for r1", op.State)
	}
	// Nor did r2's watch try it, to be turned away by the journal's claim.
	if strings.Contains(rs.logs.String(), "another replica holds the operation") {
		t.Errorf("r2 tried r1's live work:\n%s", rs.logs.String())
	}
	if got, err := r1.Proceed(ctx, d); err != nil || got.Status != action.StatusSucceeded {
		t.Fatalf("Proceed = %+v, %v", got, err)
	}
	if len(s1.Sent()) != 1 || len(s2.Sent()) != 2 {
		t.Errorf("r1 sent %d, r2 sent %d; want r1 its own one, r2 the two free ones", len(s1.Sent()), len(s2.Sent()))
	}
}

// Only the leader writes the vault: a replica that does not lead leaves the note
// of its unknown outcome to the leader, which writes it in its own folder.
func TestOnlyTheLeaderWritesNotes(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	own, err := vault.Open(filepath.Join(t.TempDir(), "r2-vault"))
	if err != nil {
		t.Fatal(err)
	}
	leader, lj := rs.start("r1", nil, false)
	r2, _ := rs.startWith("r2", &scriptSender{script: []error{unknown}}, false, own)
	sweep(t, leader)
	waitUntil(t, "r1 leads", func() bool { ok, _ := leader.Leading(); return ok })
	sweep(t, r2)
	id, apID := askAt(t, r2, "unknown at a replica that does not lead")
	if got, err := r2.Decide(ctx, apID, approverID, true); err != nil || got.SideEffect != action.SideEffectUnknown {
		t.Fatalf("Decide = %+v, %v; want unknown", got, err)
	}
	waitUntil(t, "the leader wrote the note", func() bool {
		op, _ := lj.Operation(ctx, id)
		_, _, err := rs.vault.Get(id)
		return op.Envelope != "" && err == nil
	})
	if _, _, err := own.Get(id); err == nil {
		t.Error("r2, which does not lead, wrote the note in its own folder")
	}
}

// askAt asks at replica o, for a person in chat 1, to send text to chat 222: the
// operation waits for approval. It returns the operation and its approval.
func askAt(t *testing.T, o *operator.Operator, text string) (opID, apID string) {
	t.Helper()
	ctx := context.Background()
	task, err := o.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Surface: transport})
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.Call(ctx, task.ID, callSend("222", text))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("Call = %+v, %v; want pending", r, err)
	}
	a, err := o.PendingApproval(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	return r.OperationID, a.ID
}

// wholeWatch waits until a replica's watch has run whole since it was called: it
// has two operations approved beside the replicas, one after the other, and waits
// until each is committed. The watch that started the first had begun before the
// second existed, and had ended before the watch that started the second began.
func wholeWatch(t *testing.T, remote *operator.Operator, j *journal.Journal) {
	t.Helper()
	for _, text := range []string{"first free", "second free"} {
		free := approvedBeside(t, remote, text+" "+time.Now().String())
		waitUntil(t, "a replica committed "+text, func() bool {
			op, _ := j.Operation(context.Background(), free)
			return op.State == journal.Committed
		})
	}
}

// A replica that stops gives up the claims on the work it does not do any more:
// another replica runs its approved operation at once, not after the lease.
// r1's sweep runs until it is stopped, so on a loaded machine it may commit
// the operation itself first, leaving nothing to hand over: such a run starts
// again, on a fresh journal, up to five times.
func TestAStoppingReplicaHandsItsWorkOver(t *testing.T) {
	t.Parallel()
	for try := 1; ; try++ {
		if handedOver(t) {
			return
		}
		if try == 5 {
			t.Fatal("r1 committed its approved operation itself before it stopped, five times in a row")
		}
	}
}

// handedOver runs TestAStoppingReplicaHandsItsWorkOver once, and reports false
// when r1 committed the operation before it stopped.
func handedOver(t *testing.T) bool {
	rs := newReplicas(t)
	ctx := context.Background()
	s2 := &scriptSender{}
	r1, j1 := rs.start("r1", &scriptSender{}, false)
	r2, _ := rs.start("r2", s2, false)
	stop, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() { defer close(ended); r1.Sweep(stop) }()
	waitUntil(t, "r1 leads", func() bool { ok, _ := r1.Leading(); return ok })
	id, apID := askAt(t, r1, "approved at r1, which stops before it sends")
	if _, err := j1.Decide(ctx, apID, journal.DecideApprove, approverID); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ended
	if op, _ := j1.Operation(ctx, id); op.State == journal.Committed && op.ClaimedBy == "r1" {
		return false
	}
	sweep(t, r2) // the clock does not move: r1's lease has not run out
	waitUntil(t, "r2 sent what r1 left", func() bool {
		op, _ := j1.Operation(ctx, id)
		return op.State == journal.Committed && op.ClaimedBy == "r2"
	})
	if n := len(s2.Sent()); n != 1 {
		t.Errorf("r2 sent %d, want 1", n)
	}
	return true
}

// A replica's sweep renews what it holds beside the journal too: a chat's
// turn its run holds keeps its lease while the run goes on, however long.
func TestASweepingReplicaRenewsItsChatsTurns(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	ctx := context.Background()
	r1, j1 := rs.start("r1", nil, false)
	task, err := j1.CreateTask(ctx, journal.Task{Requester: operatorID, Chat: "100", Summary: "chat",
		Origin: transport + ":message:100:1", Policy: testPolicy(t)})
	if err != nil {
		t.Fatal(err)
	}
	turns := coord.New(j1)
	turn := coord.ChatTurn{Transport: transport, Chat: "100", Task: task.ID}
	if err := turns.QueueChatTurn(ctx, turn); err != nil {
		t.Fatal(err)
	}
	if try, err := turns.TakeChatTurn(ctx, turn); err != nil || !try.Taken {
		t.Fatalf("TakeChatTurn = %+v, %v; want the turn taken", try, err)
	}
	rs.clock.Advance(9 * time.Second) // 1 s of the 10 s lease left: too little to go on
	if err := turns.HoldChatTurn(ctx, turn); !errors.Is(err, coord.ErrChatTurnLost) {
		t.Fatalf("HoldChatTurn with 1 s left = %v, want ErrChatTurnLost", err)
	}
	sweep(t, r1)
	waitUntil(t, "r1's sweep renewed the turn's lease", func() bool { return turns.HoldChatTurn(ctx, turn) == nil })
}
