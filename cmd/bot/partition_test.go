package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A replica cut off from its database by a link gone silent, with work in
// flight that waits on the database (the record of a commit Telegram answered
// after the cut, an update it is storing), finds its
// name lock lost and exits within a lease of finding it, leaving what the
// database never answered to the replicas' rules for a dead replica, so that
// its supervisor starts it again: it does not wait for the link to come back.
func TestAReplicaCutOffSilentlyExits(t *testing.T) {
	t.Parallel()
	srv := telegramtest.New(telegramtest.Options{Token: childToken})
	defer srv.Close()
	through, p := pgtest.Through(t, pgtest.Fresh(t))
	r1 := startReplica(t, srv, through, filepath.Join(t.TempDir(), "vault"), "r1", true)
	exited := make(chan error, 1)
	go func() { exited <- r1.cmd.Wait() }()

	// A commit on the wire when the link goes silent: Telegram answers it
	// after the cut, and r1's record of the answer waits on the database.
	r1.post(t, privateMessage(100, "/send 222 on the wire at the cut"))
	card, data := cardFor(t, srv, 100, "on the wire at the cut")
	srv.Inject(telegramtest.Delay(8 * time.Second).For("sendMessage").InChat(222))
	r1.post(t, tap(100, card, data))
	if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return len(s.Messages(222)) > 0 }); err != nil {
		t.Fatalf("the approved send never reached Telegram: %v\n%s", err, r1.logs())
	}
	p.Cut(partition.Hang)
	cut := time.Now()
	go func() { // stored in the inbox before its answer: it waits on the database too
		update := privateMessage(100, "/ops")
		update["update_id"] = 9000 + updateIDs.Add(1)
		body, _ := json.Marshal(update)
		req, _ := http.NewRequest(http.MethodPost, "http://"+r1.addr+"/telegram", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", hookSecret)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(r1.logs(), "lost its name lock") {
			t.Errorf("r1 exited %v, its log:\n%s", err, r1.logs())
		}
		t.Logf("r1 exited %s after the cut", time.Since(cut).Round(100*time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("r1 still runs 20 s into the cut (its lease is 2 s):\n%s", r1.logs())
	}
}
