package journal_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// An approval's mark of who published it is taken by one of two watches that
// read it alike (a compare-and-set on the mark as read), and reads back.
func TestAnApprovalIsMarkedShownOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAnApprovalIsMarkedShownOnce)
}

func testAnApprovalIsMarkedShownOnce(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	other := open(t, name, c.Now) // another replica's journal on the same store
	_, op := newOp(t, j)
	a := asked(t, j, op, time.Hour)
	read, err := j.Approval(ctx, a.ID)
	if err != nil || !read.Shown.IsZero() || read.ShownBy != "" {
		t.Fatalf("a fresh approval = %+v, %v; want it marked by nobody", read, err)
	}
	c.Add(time.Minute)
	if ok, err := j.ShowApproval(ctx, read, "run-a"); !ok || err != nil {
		t.Fatalf("first mark = %v, %v; want taken", ok, err)
	}
	if ok, err := other.ShowApproval(ctx, read, "run-b"); ok || err != nil {
		t.Fatalf("second mark on the same read = %v, %v; want refused", ok, err)
	}
	got, err := other.Approval(ctx, a.ID)
	if err != nil || got.ShownBy != "run-a" || !got.Shown.Equal(c.Now().Truncate(time.Millisecond)) {
		t.Errorf("marked %v by %q, %v; want now by run-a", got.Shown, got.ShownBy, err)
	}
	if ok, err := other.ShowApproval(ctx, got, "run-b"); !ok || err != nil {
		t.Errorf("a mark on the approval as now read = %v, %v; want taken", ok, err)
	}
}

// ShownLast returns the pending approvals published within the while before
// the latest publication of the transport, however long ago that was: the ones
// a stopped run was showing in its last moments. Older ones, decided ones,
// never published ones and another transport's are not among them, and another
// transport's later publication (the console beside the bot) moves nothing.
func TestShownLastIsTheLastMomentsOfPublishing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testShownLastIsTheLastMomentsOfPublishing)
}

func testShownLastIsTheLastMomentsOfPublishing(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	show := func(a *journal.Approval) {
		t.Helper()
		read, err := j.Approval(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := j.ShowApproval(ctx, read, "run-a"); !ok || err != nil {
			t.Fatalf("mark = %v, %v", ok, err)
		}
	}
	approval := func() *journal.Approval {
		t.Helper()
		_, op := newOp(t, j)
		return asked(t, j, op, 24*time.Hour)
	}
	old, unshown, recent, decided := approval(), approval(), approval(), approval()
	show(old)
	c.Add(10 * time.Minute)
	show(recent)
	show(decided)
	if _, err := j.Decide(ctx, decided.ID, journal.DecideReject, 7); err != nil {
		t.Fatal(err)
	}
	c.Add(3 * time.Hour) // the run stopped long ago
	task, _ := newOp(t, j)
	console, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "console",
		Surface: "console", Transport: "console", Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
	if err != nil {
		t.Fatal(err)
	}
	show(asked(t, j, console, 24*time.Hour)) // the console's, published now
	got, err := j.ShownLast(ctx, "telegram", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range got {
		ids = append(ids, a.ID)
	}
	if !slices.Equal(ids, []string{recent.ID}) {
		t.Errorf("shown last = %v, want only %s (not %s, published earlier, nor %s, never, nor %s, decided)",
			ids, recent.ID, old.ID, unshown.ID, decided.ID)
	}
	if got, err := j.ShownLast(ctx, "console", time.Hour); err != nil || len(got) != 1 || got[0].OperationID != console.ID {
		t.Errorf("the console's = %v, %v; want its one approval alone", got, err)
	}
}
