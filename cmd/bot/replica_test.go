package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

// replicaProc is one `countersign run` replica in a child process.
type replicaProc struct {
	name string
	cmd  *exec.Cmd
	logs func() string
	addr string // its webhook listener, in webhook mode
}

const hookSecret = "replica-test-webhook-secret"

// startReplica runs `countersign run` as replica name on the journal at url, with the
// vault folder shared by the replicas, polling or (hook) behind a webhook.
func startReplica(t testing.TB, srv *telegramtest.Server, url, vaultDir, name string, hook bool) *replicaProc {
	t.Helper()
	data, logs, _ := childData(t, srv)
	flags := []string{"-journal", url, "-vault", vaultDir, "-replica", name, "-lease", "2s"}
	if hook {
		flags = append(flags, "-webhook-listen", "127.0.0.1:0", "-webhook-url", "https://hook.replicas.test/telegram")
	}
	p := &replicaProc{name: name, logs: logs}
	p.cmd = startBotWith(t, srv, data, []string{"TELEGRAM_WEBHOOK_SECRET=" + hookSecret, "BOT_APPROVERS=100,101"}, flags...)
	if hook {
		p.addr = waitLog(t, logs, regexp.MustCompile(`"webhook serving" .*listen=(\S+)`))
	}
	return p
}

// kill ends the replica with SIGKILL: no code of its own runs.
func (p *replicaProc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

var updateIDs atomic.Int64

// post delivers an update to a replica's webhook as Telegram does, and fails the
// test unless the replica stored it (200).
func (p *replicaProc) post(t *testing.T, update map[string]any) {
	t.Helper()
	update["update_id"] = 9000 + updateIDs.Add(1)
	body, _ := json.Marshal(update)
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/telegram", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", hookSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post to %s: %v", p.name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post to %s: %s\n%s", p.name, resp.Status, p.logs())
	}
}

var messageIDs atomic.Int64

func privateMessage(from int64, text string) map[string]any {
	user := map[string]any{"id": from, "is_bot": false, "first_name": "Olga"}
	msg := map[string]any{"message_id": 500 + messageIDs.Add(1), "date": time.Now().Unix(), "text": text, "from": user,
		"chat": map[string]any{"id": from, "type": "private", "first_name": "Olga"}}
	if strings.HasPrefix(text, "/") {
		msg["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": strings.IndexByte(text+" ", ' ')}}
	}
	return map[string]any{"message": msg}
}

func tap(from int64, card telegramtest.Message, data string) map[string]any {
	user := map[string]any{"id": from, "is_bot": false, "first_name": "Olga"}
	return map[string]any{"callback_query": map[string]any{"id": fmt.Sprintf("cq-%d-%d", card.MessageID, from), "from": user,
		"chat_instance": "1", "data": data,
		"message": map[string]any{"message_id": card.MessageID, "date": time.Now().Unix(), "text": "card",
			"chat": map[string]any{"id": card.Chat.ID, "type": "private", "first_name": "Olga"}}}}
}

// cardFor waits for the approval card of the /send whose text is text in chat.
func cardFor(t testing.TB, srv *telegramtest.Server, chat int64, text string) (telegramtest.Message, string) {
	t.Helper()
	var card telegramtest.Message
	if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(string(m.ReplyMarkup), "ap1:") && strings.Contains(m.Text, text) {
				card = m
			}
		}
		return card.MessageID != 0
	}); err != nil {
		t.Fatalf("no card for %q in chat %d: %v", text, chat, err)
	}
	data := strings.Split(string(card.ReplyMarkup), `"callback_data":"`)[1]
	return card, data[:strings.Index(data, `"`)]
}

func openJournalAt(t *testing.T, url string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// onlyOperation returns the operation whose text is text.
func operationWithText(t *testing.T, j *journal.Journal, text string) journal.Operation {
	t.Helper()
	ops, err := j.Operations(context.Background(), journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if op.Payload.Text == text {
			return op
		}
	}
	t.Fatalf("no operation with text %q", text)
	return journal.Operation{}
}

// Behind a load balancer, replicas on one PostgreSQL journal take updates from
// anywhere: a command at one, its tap at the other, the same tap delivered to
// both, and the message goes out once, committed by the replica the tap reached.
// A replica killed while its send hangs leaves the commit to the other, which
// makes it unknown once the lease is past, writes the note and tells the
// requester: never a resend.
func TestReplicasBehindALoadBalancer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	url := pgtest.Fresh(t)
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	srv.Inject(telegramtest.AcceptThenHang().For("sendMessage").InChat(333))
	vaultDir := filepath.Join(t.TempDir(), "vault")
	r1 := startReplica(t, srv, url, vaultDir, "r1", true)
	r2 := startReplica(t, srv, url, vaultDir, "r2", true)
	j := openJournalAt(t, url)

	r1.post(t, privateMessage(100, "/send 222 one send from two replicas"))
	card, data := cardFor(t, srv, 100, "one send from two replicas")
	r2.post(t, tap(100, card, data))
	r1.post(t, tap(100, card, data)) // the same tap again, at the other replica: a no-op
	if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 }); err != nil {
		t.Fatalf("no delivery: %v\nr1:\n%s\nr2:\n%s", err, r1.logs(), r2.logs())
	}
	op := operationWithText(t, j, "one send from two replicas")
	if !eventually(10*time.Second, func() bool {
		op = operationWithText(t, j, "one send from two replicas")
		return op.State == journal.Committed
	}) {
		t.Fatalf("operation %s is %s, want committed", op.ID, op.State)
	}
	if op.ClaimedBy != "r2" {
		t.Errorf("committed by %q, want r2, which the tap reached", op.ClaimedBy)
	}
	// The card is edited (by the leader, from the journal): the decision, no buttons.
	if err := srv.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool {
		m, ok := s.Message(100, card.MessageID)
		return ok && strings.Contains(m.Text, "Approved by") && !strings.Contains(string(m.ReplyMarkup), "ap1:")
	}); err != nil {
		m, _ := srv.Message(100, card.MessageID)
		t.Errorf("the card was not closed: %q %s\nr1:\n%s\nr2:\n%s", m.Text, m.ReplyMarkup, r1.logs(), r2.logs())
	}

	// r2 commits a send that Telegram takes and never answers; r2 is killed.
	r1.post(t, privateMessage(100, "/send 333 on the wire when r2 dies"))
	card, data = cardFor(t, srv, 100, "on the wire when r2 dies")
	r2.post(t, tap(100, card, data))
	if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return len(s.Messages(333)) == 1 }); err != nil {
		t.Fatalf("Telegram never took the message: %v\n%s", err, r2.logs())
	}
	r2.kill()
	if err := srv.WaitTimeout(30*time.Second, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(string(m.ReplyMarkup), "rs1:") {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the requester was not told of the unknown outcome: %v\nr1:\n%s", err, r1.logs())
	}
	lost := operationWithText(t, j, "on the wire when r2 dies")
	ts, _ := j.Transitions(context.Background(), lost.ID)
	if last := ts[len(ts)-1]; lost.State != journal.Unknown || last.Reason != journal.ReasonLeaseExpired {
		t.Errorf("%s: %s, last %+v; want unknown by %s", lost.ID, lost.State, last, journal.ReasonLeaseExpired)
	}
	v, err := vault.Open(vaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool {
		e, _, err := v.Get(lost.ID)
		return err == nil && e.Unresolved()
	}) {
		t.Errorf("no unresolved note for %s in the shared vault\nr1:\n%s", lost.ID, r1.logs())
	}
	if n := len(srv.Messages(333)); n != 1 {
		t.Errorf("deliveries to 333 = %d, want 1", n)
	}
	// The tap r2 was handling when it died is taken over by r1 once r2's lease is
	// past, and handled (a no-op: it was decided): no update is left behind.
	if !eventually(20*time.Second, func() bool {
		left, err := j.Unhandled(context.Background())
		return err == nil && len(left) == 0
	}) {
		left, _ := j.Unhandled(context.Background())
		t.Errorf("updates never handled: %v\nr1:\n%s", inboxKeys(left), r1.logs())
	}
}

// eventually reports whether ok came true within d, asked every 20 ms: for what
// the journal or the vault say, which the fake Telegram's changes do not signal.
func eventually(d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func inboxKeys(items []journal.InboxItem) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

// In polling mode one replica polls; when it dies, another takes over and the
// next update is taken.
func TestAPollingLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	url := pgtest.Fresh(t)
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	vaultDir := filepath.Join(t.TempDir(), "vault")
	r1 := startReplica(t, srv, url, vaultDir, "r1", false)
	waitLog(t, r1.logs, regexp.MustCompile(`(polling): this replica leads`))
	r2 := startReplica(t, srv, url, vaultDir, "r2", false)
	waitLog(t, r2.logs, regexp.MustCompile(`(another replica polls)`))

	srv.PushMessage(100, 100, "/send 222 before the leader dies")
	cardFor(t, srv, 100, "before the leader dies")
	r1.kill()
	srv.PushMessage(100, 100, "/send 222 after the leader died")
	cardFor(t, srv, 100, "after the leader died")
	waitLog(t, r2.logs, regexp.MustCompile(`(polling): this replica leads`))
	if lost := srv.ConfirmedUnread(); len(lost) != 0 {
		t.Errorf("updates confirmed unread: %v", lost)
	}
}

// BenchmarkPollingFailover measures, in polling mode, the time from SIGKILL of
// the leading replica to the card of the next command (the update taken by the
// replica that took over, and handled), beside the same command's time with a
// live leader, measured in the same run: the baseline.
//
//	go test -run '^$' -bench PollingFailover -benchtime 5x ./cmd/bot
func BenchmarkPollingFailover(b *testing.B) {
	url := pgtest.Fresh(b)
	srv := telegramtest.NewServer(b, telegramtest.Options{Token: childToken})
	vaultDir := filepath.Join(b.TempDir(), "vault")
	var failover, live time.Duration
	for i := range b.N {
		b.StopTimer()
		lead := startReplica(b, srv, url, vaultDir, fmt.Sprintf("a%d", i), false)
		waitLog(b, lead.logs, regexp.MustCompile(`(polling): this replica leads`))
		next := startReplica(b, srv, url, vaultDir, fmt.Sprintf("b%d", i), false)
		waitLog(b, next.logs, regexp.MustCompile(`(another replica polls)`))
		start := time.Now()
		srv.PushMessage(100, 100, fmt.Sprintf("/send 222 live %d", i))
		cardFor(b, srv, 100, fmt.Sprintf("live %d", i))
		live += time.Since(start)
		b.StartTimer()
		start = time.Now()
		lead.kill()
		srv.PushMessage(100, 100, fmt.Sprintf("/send 222 failover %d", i))
		cardFor(b, srv, 100, fmt.Sprintf("failover %d", i))
		failover += time.Since(start)
		b.StopTimer()
		next.kill()
	}
	b.ReportMetric(float64(failover.Milliseconds())/float64(b.N), "failover-ms/op")
	b.ReportMetric(float64(live.Milliseconds())/float64(b.N), "live-leader-ms/op")
}
