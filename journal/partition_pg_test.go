package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// A replica cut off from the database by a silent link (no reset, nothing
// heard) gives its name up once its ping finds the session gone, and its
// supervisor starts it again, on a host that reaches the database. The server,
// which hears nothing of the one cut off, must not keep the name lock for its
// session (as it would until its TCP keepalive, hours by default): the new
// process joins once the lease has passed.
func TestANameCutOffSilentlyIsFreedByTheServer(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	cut, p := pgtest.Through(t, name)
	const lease = 2 * time.Second
	r1 := openWith(t, cut)
	if err := r1.Join(ctx, "telegram", "r1", lease); err != nil {
		t.Fatal(err)
	}
	p.Cut(partition.Hang)
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	for err := r1.RenewLeases(ctx); !errors.Is(err, journal.ErrReplicaLost); err = r1.RenewLeases(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("Renew 15 s into the cut = %v, want ErrReplicaLost", err)
		}
	}
	defer p.Heal()
	again, err := journal.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	deadline = time.Now().Add(20 * time.Second)
	for {
		err := again.Join(ctx, "telegram", "r1", lease)
		if err == nil {
			break
		}
		if !errors.Is(err, journal.ErrReplicaRunning) || time.Now().After(deadline) {
			t.Fatalf("join as r1 %s after the cut began: %v", time.Since(start).Round(time.Second), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(start); d < lease {
		t.Errorf("r1 joined again %s after the cut, within the lease of the one cut off", d)
	}
}

// A replica cut off from the database by a silent link in the middle of a
// write, its transaction holding the audit trail's lock, must not keep the
// other replicas' writes waiting behind its session at the server for good.
func TestAWriteCutOffSilentlyHoldsNobodyUp(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	cut, p := pgtest.Through(t, name)
	r1 := openWith(t, cut, journal.WithIdleInTransaction(2*time.Second))
	rollback, err := r1.BeginAppend(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut(partition.Hang)
	defer func() { p.Heal(); rollback() }()
	r2 := openWith(t, name)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	task, err := r2.CreateTask(wctx, journal.Task{Requester: 7})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = r2.CreateOperation(wctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
		Surface: "telegram", Transport: "telegram", Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
	if err != nil {
		t.Fatalf("an audited write of another replica %s into the cut: %v", time.Since(start).Round(time.Second), err)
	}
	t.Logf("the other replica's write waited %s", time.Since(start).Round(time.Millisecond))
}

// A write that meets the database out of reach says so (IsUnreachable), for a
// surface to take its work again later instead of dropping it: a session the
// server ended, a connection reset, a server that refuses connections. A write
// the database refused does not.
func TestTheDatabaseOutOfReachIsToldApart(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	cut, p := pgtest.Through(t, name)
	j := openWith(t, cut)
	if _, err := j.CreateTask(ctx, journal.Task{Requester: 7, Origin: "o-1"}); err != nil {
		t.Fatal(err)
	}
	_, err := j.CreateTask(ctx, journal.Task{Requester: 7, Origin: "o-1"})
	if !errors.Is(err, journal.ErrDuplicate) || journal.IsUnreachable(err) {
		t.Errorf("a task refused as a duplicate: %v, unreachable %v", err, journal.IsUnreachable(err))
	}
	p.Cut(partition.Reset)
	_, err = j.CreateTask(ctx, journal.Task{Requester: 7})
	if err == nil || !journal.IsUnreachable(err) {
		t.Errorf("a write through a reset link: %v, want it told unreachable", err)
	}
	p.Heal()
	p.Close() // nothing listens there any more: connections are refused
	_, err = j.CreateTask(ctx, journal.Task{Requester: 7})
	if err == nil || !journal.IsUnreachable(err) {
		t.Errorf("a write to an address that refuses connections: %v, want it told unreachable", err)
	}
}
