package main

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// botRun is countersign run, in process, on a data folder against a fake Bot API.
type botRun struct {
	t      *testing.T
	srv    *telegramtest.Server
	cancel context.CancelFunc
	done   chan int
	log    *syncBuffer
}

// startRun starts countersign run on data and pol against srv and waits until it
// answers: a /whoami from a user nobody else is, so that a restart is waited
// for as well as a first start;
// extra is more of the environment, and flags, of countersign run.
func startRun(t *testing.T, srv *telegramtest.Server, data, pol string, extra map[string]string, flags ...string) *botRun {
	t.Helper()
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL()}
	maps.Copy(env, extra)
	ctx, cancel := context.WithCancel(context.Background())
	b := &botRun{t: t, srv: srv, cancel: cancel, done: make(chan int, 1), log: &syncBuffer{}}
	go func() {
		b.done <- Main(ctx, append([]string{"run", "-data", data, "-policies", pol, "-poll-timeout", "1s"}, flags...),
			Env{Stdin: strings.NewReader(""), Stdout: b.log, Stderr: b.log, Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(b.stop)
	const probe = 7
	before := len(srv.Messages(probe))
	srv.PushMessage(probe, probe, "/whoami")
	b.wait("the bot to answer", func(s *telegramtest.Server) bool { return len(s.Messages(probe)) > before })
	return b
}

func (b *botRun) wait(what string, cond func(*telegramtest.Server) bool) {
	b.t.Helper()
	if err := b.srv.WaitTimeout(childWait, cond); err != nil {
		b.t.Fatalf("waiting for %s: %v\nbot log:\n%s", what, err, b.log.String())
	}
}

// stop ends countersign run and waits for it.
func (b *botRun) stop() {
	if b.cancel == nil {
		return
	}
	b.cancel()
	b.cancel = nil
	select {
	case code := <-b.done:
		if code != exitOK {
			b.t.Errorf("countersign run: exit %d\n%s", code, b.log.String())
		}
	case <-time.After(20 * time.Second):
		b.t.Errorf("countersign run did not stop\n%s", b.log.String())
	}
}

// said waits for a message in chat containing text and returns it.
func (b *botRun) said(chat int64, text string) telegramtest.Message {
	b.t.Helper()
	var found telegramtest.Message
	b.wait("a message with "+text, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(m.Text, text) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

var codeIn = regexp.MustCompile(`countersign pair ([0-9A-Z]{4}-[0-9A-Z]{4})`)

// code asks the bot for a pairing code as user, and returns it.
func (b *botRun) code(user int64) string {
	b.t.Helper()
	b.srv.PushMessage(user, user, "/start")
	m := b.said(user, "countersign pair ")
	c := codeIn.FindStringSubmatch(m.Text)
	if c == nil {
		b.t.Fatalf("no code in %q", m.Text)
	}
	return c[1]
}

// freshBot writes a policy with no access lists and a data folder, as bot
// init without -user does.
func freshBot(t *testing.T) (data, pol string) {
	root := t.TempDir()
	data, pol = filepath.Join(root, "data"), filepath.Join(root, "policies.yaml")
	if r := runMain(t, "", nil, "init", "-data", data, "-policies", pol); !strings.Contains(r.stdout, "policy: wrote") {
		t.Fatalf("countersign init: %s%s", r.stdout, r.stderr)
	}
	return data, pol
}

// From a fresh policy to an approved send on the phone, end to end over HTTP:
// countersign run with no operators says pairing is open (one line, no warnings); /start
// in Telegram gives a code the log never shows; countersign pair confirms it; the
// running bot tells the person, who can /send, gets the card and taps it. Nobody
// else can pair after that, a restart keeps the pairing, and countersign mcp and the
// access record agree.
func TestPairingFromAFreshPolicyToAnApprovedSend(t *testing.T) {
	t.Parallel()
	const owner, stranger = 111, 333
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, pol := freshBot(t)
	b := startRun(t, srv, data, pol, nil)
	start := b.log.String()
	if !strings.Contains(start, "level=INFO") || !strings.Contains(start, "pairing open") || !strings.Contains(start, "countersign pair -data "+data) {
		t.Errorf("the start-up log does not say at INFO that pairing is open and how to confirm:\n%s", start)
	}
	if strings.Contains(start, "level=WARN") {
		t.Errorf("the start-up log warns:\n%s", start)
	}
	code := b.code(owner)
	b.wait("the pending pairing in the log", func(*telegramtest.Server) bool { return strings.Contains(b.log.String(), "pairing pending") })
	if log := b.log.String(); !strings.Contains(log, "user=111") || strings.Contains(log, code) || strings.Contains(log, strings.ReplaceAll(code, "-", "")) {
		t.Errorf("the log should name user 111 and never the code %s:\n%s", code, log)
	}

	r := runMain(t, "", nil, "pair", "-data", data, code)
	if r.code != exitOK || !strings.Contains(r.stdout, "paired: user 111") {
		t.Fatalf("countersign pair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.said(owner, "Paired: you are this bot's operator and approver now")
	b.wait("the pairing logged", func(*telegramtest.Server) bool { return strings.Contains(b.log.String(), "msg=\"paired: ") })
	srv.PushMessage(owner, owner, "/send 222 hello from a paired phone")
	card, data0 := cardFor(t, srv, owner, "hello from a paired phone")
	srv.PushCallbackQuery(owner, owner, card.MessageID, data0)
	b.said(222, "hello from a paired phone")

	srv.PushMessage(stranger, stranger, "/start")
	if m := b.said(stranger, "Your user id is 333"); strings.Contains(m.Text, "countersign pair") || !strings.Contains(m.Text, "no role here") {
		t.Errorf("a second person after the pairing got %q, want no code and no role", m.Text)
	}
	if r := runMain(t, "", nil, "pair", "-data", data, code); r.code != exitError || !strings.Contains(r.stderr, "paired already") {
		t.Errorf("countersign pair with the spent code: exit %d, want %d saying it is paired already\n%s", r.code, exitError, r.stderr)
	}
	assertRecorded(t, data, owner)

	b.stop()
	b = startRun(t, srv, data, pol, nil)
	if log := b.log.String(); strings.Contains(log, "pairing open") || !strings.Contains(log, "operators=1 approvers=1") {
		t.Errorf("after a restart the bot should serve its paired operator, pairing closed:\n%s", log)
	}
	srv.PushMessage(owner, owner, "/whoami")
	b.said(owner, "Your role here: operator and approver")
	srv.PushMessage(444, 444, "/start")
	if m := b.said(444, "Your user id is 444"); strings.Contains(m.Text, "countersign pair") {
		t.Errorf("a newcomer after a restart was offered a code: %q", m.Text)
	}
	b.stop()
	if r := runMain(t, "", nil, "mcp", "-data", data, "-policies", pol); r.code != exitOK || strings.Contains(r.stderr, "no approvers") {
		t.Errorf("countersign mcp on the paired data folder: exit %d\n%s", r.code, r.stderr)
	}

}

// assertRecorded checks that the access record countersign mcp reads names user as
// operator and approver.
func assertRecorded(t *testing.T, data string, user int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, accessFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec accessRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.Operators, policy.UserID(user)) || !slices.Contains(rec.Approvers, policy.UserID(user)) {
		t.Errorf("access record %s, want %d as operator and approver", b, user)
	}
}

// A code that is wrong, expired, missing or not pending pairs nobody, says why
// and what to do, and the bot goes on offering codes; once an operator is
// configured, a code given before pairs nobody either.
func TestBotPairRefuses(t *testing.T) {
	const user = 111
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, pol := freshBot(t)
	b := startRun(t, srv, data, pol, nil)
	code := b.code(user)
	expire := func() {
		path := filepath.Join(data, pairing.CodesFile)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
		text = regexp.MustCompile(`"expires":"[^"]*"`).ReplaceAll(text, []byte(`"expires":"`+past+`"`))
		if err := os.WriteFile(path, text, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		before func()
		args   []string
		code   int
		say    []string
	}{
		{name: "a wrong code", args: []string{"-data", data, "ZZZZ-ZZZZ"}, code: exitError,
			say: []string{"not a pending code on " + data, "nothing changed"}},
		{name: "no code", args: []string{"-data", data}, code: exitUsage, say: []string{"missing <code>"}},
		{name: "another data folder", args: []string{"-data", t.TempDir(), code}, code: exitError,
			say: []string{"no code is pending", "send /start"}},
		{name: "an expired code", before: expire, args: []string{"-data", data, code}, code: exitError,
			say: []string{"the code expired at", "nothing changed", "for a new code"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			r := runMain(t, "", nil, append([]string{"pair"}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, s := range tt.say {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if _, ok, err := pairing.Load(data); ok || err != nil {
				t.Errorf("after %s: paired %v, %v; want nobody", tt.name, ok, err)
			}
		})
	}
	late := b.code(222) // still open: a newcomer still gets a code
	if strings.Contains(stringsOf(srv.Messages(user)), "Paired") {
		t.Errorf("user %d was told they paired", user)
	}

	// An operator configured since: the code given before pairs nobody.
	b.stop()
	startRun(t, srv, data, pol, map[string]string{"BOT_OPERATORS": "999", "BOT_APPROVERS": "999"})
	if r := runMain(t, "", nil, "pair", "-data", data, late); r.code != exitError || !strings.Contains(r.stderr, "no code is pending") {
		t.Errorf("countersign pair with a code from before an operator was configured: exit %d\n%s", r.code, r.stderr)
	}
}

func stringsOf(ms []telegramtest.Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}

// The person paired joins whatever lists the policy, the environment or the
// access record gave, once; a data folder nobody paired on changes nothing.
func TestPairedJoinsTheAccessLists(t *testing.T) {
	paired := t.TempDir()
	if err := os.WriteFile(filepath.Join(paired, pairing.PairedFile), []byte(`{"user":111,"paired_at":"2026-03-01T12:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		data                 string
		operators, approvers []policy.UserID
		record               string // DATA/access.json, read as countersign mcp reads it; "" for none
		wantOps, wantApps    []policy.UserID
	}{
		{name: "nobody paired", data: t.TempDir(), operators: []policy.UserID{5}, wantOps: []policy.UserID{5}},
		{name: "no lists", data: paired, wantOps: []policy.UserID{111}, wantApps: []policy.UserID{111}},
		{name: "beside the policy's", data: paired, operators: []policy.UserID{5}, approvers: []policy.UserID{6}, wantOps: []policy.UserID{5, 111}, wantApps: []policy.UserID{6, 111}},
		{name: "named already", data: paired, operators: []policy.UserID{111}, approvers: []policy.UserID{111}, wantOps: []policy.UserID{111}, wantApps: []policy.UserID{111}},
		{name: "a record from before the pairing", data: paired, record: `{"operators":[],"approvers":[]}`, wantOps: []policy.UserID{111}, wantApps: []policy.UserID{111}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPolicyWith(t, tt.operators, tt.approvers)
			cfg := Config{DataDir: tt.data}
			var err error
			if tt.record != "" {
				os.WriteFile(filepath.Join(tt.data, accessFile), []byte(tt.record), 0o600)
				_, err = runningAccess(cfg, p, func(string) string { return "" })
				defer os.Remove(filepath.Join(tt.data, accessFile))
			} else {
				err = withPaired(cfg, p)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Access.Operators, tt.wantOps) || !slices.Equal(p.Access.Approvers, tt.wantApps) {
				t.Errorf("access = %v / %v, want %v / %v", p.Access.Operators, p.Access.Approvers, tt.wantOps, tt.wantApps)
			}
		})
	}
}

func testPolicyWith(t *testing.T, operators, approvers []policy.UserID) *policy.Policy {
	t.Helper()
	p, err := policy.Load("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: operators, Approvers: approvers}
	return p
}

// A bot with approvers and no operator pairs too, and its MCP server, wired
// over the access lists, is served again on the same address once the person
// paired: the bot goes on serving both.
func TestPairingWithAnMCPServer(t *testing.T) {
	t.Parallel()
	const owner = 111
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, pol := freshBot(t)
	b := startRun(t, srv, data, pol, map[string]string{"BOT_APPROVERS": "222"}, "-mcp-listen", addr)
	code := b.code(owner)
	if r := runMain(t, "", nil, "pair", "-data", data, code); r.code != exitOK {
		t.Fatalf("countersign pair: exit %d\n%s", r.code, r.stderr)
	}
	b.said(owner, "Paired: you are this bot's operator and approver now")
	srv.PushMessage(owner, owner, "/whoami")
	b.said(owner, "Your role here: operator and approver")
	if n := strings.Count(b.log.String(), "MCP server listening"); n != 2 {
		t.Errorf("the MCP server listened %d times, want twice: before and after the pairing\n%s", n, b.log.String())
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("the MCP server is not listening after the pairing: %v\n%s", err, b.log.String())
	}
	conn.Close()
	assertRecorded(t, data, owner)
}

// The person paired is welcomed once the round that served them as a stranger
// has stopped: what they send on reading the welcome is served by the next
// round, which names them operator, and is never refused as a stranger's. The
// welcome is held a second on its way (a slow network), and /whoami is sent
// as soon as it left the bot.
func TestWhatThePairedSendOnTheWelcomeIsServed(t *testing.T) {
	t.Parallel()
	const owner = 111
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, pol := freshBot(t)
	b := startRun(t, srv, data, pol, nil)
	code := b.code(owner)
	srv.Inject(telegramtest.Fault{Method: "sendMessage", ChatID: owner, Delay: time.Second})
	if r := runMain(t, "", nil, "pair", "-data", data, code); r.code != exitOK {
		t.Fatalf("countersign pair: exit %d\n%s", r.code, r.stderr)
	}
	b.wait("the welcome on its way", func(s *telegramtest.Server) bool {
		for _, c := range s.CallsTo("sendMessage") {
			if c.ChatID == owner && strings.Contains(c.Params["text"], "Paired") {
				return true
			}
		}
		return false
	})
	srv.PushMessage(owner, owner, "/whoami")
	b.said(owner, "Your role here: operator and approver")
}

// Someone who may not write in the data folder (the service's, 0700) is told
// the exact line that confirms as its owner, the user the shipped systemd
// unit runs as.
func TestPairTellsWhoMayConfirm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a folder to another user (CI runs as root)")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	who := "#65534"
	if u, err := user.LookupId("65534"); err == nil {
		who = u.Username
	}
	want := "sudo -u " + who + " countersign pair -data " + dir + " ABCD-EFGH"
	if got := asOwner("countersign", dir, "ABCD-EFGH"); !strings.Contains(got, want) {
		t.Errorf("asOwner = %q, want it to hold %q", got, want)
	}
}
