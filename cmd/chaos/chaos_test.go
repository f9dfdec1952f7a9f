package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// A short seeded run, as CI makes it: the real binary, every kind of fault, model
// turns against the scripted model, a full disk (as root), two kills, and every
// promise checked. The wind-down waits as long as work moves, so a loaded machine
// makes it slower, never red.
func TestChaosShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the bot binary for half a minute")
	}
	var out bytes.Buffer
	rep, err := Run(context.Background(), Config{Seed: 11, Ops: 30, Kills: 2, Duration: 25 * time.Second, Chats: 12, ModelShare: 0.3, FullDisk: true,
		Policies: "../../policies.yaml"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a promise broke:\n%s", out.String())
	}
	if rep.Actions["kill -9 and restart"] != 2 || rep.Delivered == 0 || rep.Actions["plain text for a model turn"] == 0 || rep.ModelRequests == 0 {
		t.Errorf("the run did not do what it says:\n%s", out.String())
	}
	if rep.FullDisk && rep.Actions["full disk"] == 0 {
		t.Errorf("the disk was mounted and never filled:\n%s", out.String())
	}
	t.Log(out.String()) // with -v: the figures of the run
}

// The checks catch what they name: a check that cannot fail proves nothing.
func TestInvariantsCatchBrokenPromises(t *testing.T) {
	w := &world{}
	if in := w.noDuplicates(map[string]int{"once": 1, "twice": 2}); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "twice") {
		t.Errorf("a text delivered twice: %+v", in)
	}
	committed := journal.Operation{ID: "op-aaaaaa", State: journal.Committed, Payload: tools.Payload{Text: "never arrived"}}
	unknown := journal.Operation{ID: "op-bbbbbb", State: journal.Unknown, Payload: tools.Payload{Text: "arrived"}}
	failed := journal.Operation{ID: "op-cccccc", State: journal.Failed, Payload: tools.Payload{Text: "arrived anyway"}}
	byText := map[string]journal.Operation{committed.Payload.Text: committed, unknown.Payload.Text: unknown, failed.Payload.Text: failed}
	in := w.journalMatchesTelegram([]journal.Operation{committed, unknown, failed},
		map[string]int{"arrived": 1, "arrived anyway": 1, "a stray": 1}, byText)
	if got := strings.Join(in.Broken, "\n"); len(in.Broken) != 3 || !strings.Contains(got, "op-aaaaaa") ||
		!strings.Contains(got, "op-cccccc") || !strings.Contains(got, "a stray") {
		t.Errorf("journal against Telegram:\n%s", got)
	}
	twice := []journal.Operation{
		{ID: "op-ffffff", TaskID: "t-1", Tool: "commit_send_message", Payload: tools.Payload{Text: "once asked"}},
		{ID: "op-gggggg", TaskID: "t-1", Tool: "commit_send_message", Payload: tools.Payload{Text: "once asked"}},
		{ID: "op-hhhhhh", TaskID: "t-2", Tool: "commit_send_message", Payload: tools.Payload{Text: "once asked"}},
	}
	if in := noToolRanTwice(twice); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "op-gggggg") {
		t.Errorf("a tool run twice in one task: %+v", in)
	}
	left := []journal.Operation{{ID: "op-dddddd", State: journal.Committing}, {ID: "op-eeeeee", State: journal.Unknown}}
	if in := everyOperationEnded(left); len(in.Broken) != 2 {
		t.Errorf("an operation left committing and an unknown without envelope: %+v", in)
	}
}
