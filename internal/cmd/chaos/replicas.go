package main

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// ErrNoReplicas is a run with -replicas above 1 of a bot that has no -replica
// flag: it refuses a second process on one journal.
var ErrNoReplicas = errors.New("this bot has no -replica flag: it runs alone on a journal")

// supportsReplicas reports whether countersign run takes -replica.
func supportsReplicas(bot string) bool { return runTakes(bot, "-replica") }

// runTakes reports whether the binary's countersign run takes flag (the
// binary under test may be one built before it did). Its usage is read once
// per binary, not at every replica's start.
func runTakes(bot, flag string) bool {
	usage, _ := runUsage.LoadOrStore(bot, sync.OnceValue(func() string {
		out, _ := exec.Command(bot, "run", "-h").CombinedOutput()
		return string(out)
	}))
	return strings.Contains(usage.(func() string)(), flag+" ")
}

// runUsage holds, per binary, what its countersign run -h prints.
var runUsage sync.Map

// webhookSecret is the replicas' shared TELEGRAM_WEBHOOK_SECRET: a secret the run
// looks for in every file and log line, as it does the bot token.
const webhookSecret = "chaos-webhook-3c8e1f0a9b274d56"

// hookURL is the public URL the replicas register; the fake Telegram posts to the
// balancer's pick instead, as a load balancer in front of them would route it.
const hookURL = "https://hook.chaos.test/telegram"

// replica is one `countersign run` process of the run.
type replica struct {
	name   string // r1, r2, ... behind the webhook (r1 also when alone); "bot" when it polls
	data   string // its own data folder
	listen string // its webhook listener, "" when it polls
	log    *os.File
	cmd    *exec.Cmd
	exit   chan error
	up     bool      // started and not killed
	back   time.Time // when a killed replica is started again
}

// balancer is the load balancer in front of the replicas' webhooks: it posts each
// update to a random replica in its rotation, takes a replica out when its
// connection is refused (a passive health check), and in again when the run
// started it and its listener answered.
type balancer struct {
	client *http.Client

	mu   sync.Mutex
	rnd  *mrand.Rand
	in   []*replica
	pin  *replica           // the next delivery's replica, whatever the draw
	took map[int64]*replica // the last replica that took each update
	// logged, when set, hears of every delivery (the database's faults' checks).
	logged func(r *replica, update int64, began time.Time, taken bool)
}

func newBalancer(seed int64) *balancer {
	return &balancer{client: &http.Client{Transport: &http.Transport{}}, rnd: mrand.New(mrand.NewPCG(uint64(seed), 0x1bba1)),
		took: map[int64]*replica{}}
}

func (b *balancer) add(r *replica) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Contains(b.in, r) {
		b.in = append(b.in, r)
	}
}

func (b *balancer) remove(r *replica) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.in = slices.DeleteFunc(b.in, func(x *replica) bool { return x == r })
}

// errNoBackend is the balancer with no replica in its rotation: Telegram
// delivers again later.
var errNoBackend = errors.New("no replica in the balancer's rotation")

// deliver is the webhook delivery of the fake Telegram, through the balancer.
func (b *balancer) deliver(ctx context.Context, update []byte, secret string) error {
	b.mu.Lock()
	if len(b.in) == 0 {
		b.mu.Unlock()
		return errNoBackend
	}
	r := b.in[b.rnd.IntN(len(b.in))]
	if b.pin != nil {
		r, b.pin = b.pin, nil
	}
	b.mu.Unlock()
	post := telegramtest.PostWebhook(b.client, func() (string, error) { return "http://" + r.listen + "/telegram", nil })
	began := time.Now()
	err := post(ctx, update, secret)
	if b.logged != nil {
		b.logged(r, telegramtest.UpdateID(update), began, err == nil)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		b.remove(r)
	}
	if err == nil {
		b.mu.Lock()
		b.took[telegramtest.UpdateID(update)] = r
		b.mu.Unlock()
	}
	return err
}

// pinNext sends the next delivery to r.
func (b *balancer) pinNext(r *replica) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pin = r
}

// tookLast is the replica that last took update id, nil when none did.
func (b *balancer) tookLast(id int64) *replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.took[id]
}

// webhook reports whether the replicas take updates by webhook (the journal is
// on PostgreSQL), not by long polling.
func (w *world) webhook() bool { return w.journal != "" }

// journalName is what journal.Open takes: the run's PostgreSQL URL, or the
// single bot's SQLite file.
func (w *world) journalName() string {
	if w.journal != "" {
		return w.journal
	}
	return filepath.Join(w.dir, "journal.db")
}

// vaultDir is the vault all replicas share.
func (w *world) vaultDir() string { return filepath.Join(w.dir, "vault") }

// dataArgs are the flags that name the journal and the vault, for the commands
// the run makes beside the bot.
func (w *world) dataArgs() []string {
	if !w.webhook() {
		return []string{"-data", w.dir}
	}
	return []string{"-data", filepath.Join(w.dir, "beside"), "-journal", w.journal, "-vault", w.vaultDir()}
}

// openJournal opens the journal to read it beside the bot. On PostgreSQL the
// run keeps one handle open; done releases what was opened.
func (w *world) openJournal() (j *journal.Journal, done func(), err error) {
	if w.j != nil {
		return w.j, func() {}, nil
	}
	j, err = journal.Open(context.Background(), w.journalName())
	if err != nil {
		return nil, nil, err
	}
	return j, func() { j.Close() }, nil
}

// childEnv is the environment of every bot process: the run's own, without a
// journal URL the run did not choose (the journal is named by flags), with the
// HTTP tools' header secret when they are in the mix (a process that builds the
// tools refuses to start without it).
func (w *world) childEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "COUNTERSIGN_DATABASE_URL=") || strings.HasPrefix(kv, apiTokenEnv+"=")
	})
	if w.mix != nil {
		env = append(env, apiTokenEnv+"="+w.mix.token)
	}
	return env
}

// newReplicas makes the run's bot processes (none started): one polling bot on
// SQLite, or Replicas webhook replicas on PostgreSQL, each with its own data
// folder and listener.
func (w *world) newReplicas(root string) error {
	if !w.webhook() {
		log, err := os.Create(filepath.Join(root, "bot.log"))
		w.reps = []*replica{{name: "bot", data: w.dir, log: log}}
		return err
	}
	for i := range max(w.cfg.Replicas, 1) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		r := &replica{name: fmt.Sprintf("r%d", i+1), listen: ln.Addr().String()}
		ln.Close()
		r.data = filepath.Join(w.dir, r.name)
		if r.log, err = os.Create(filepath.Join(root, r.name+".log")); err != nil {
			return err
		}
		w.reps = append(w.reps, r)
	}
	return nil
}

// args are the flags of replica r's `countersign run`.
func (w *world) args(r *replica) []string {
	args := []string{"run", "-data", r.data, "-policies", w.policies}
	if w.webhook() {
		args = append(args, "-journal", w.journalOf(r), "-vault", w.vaultDir(), "-webhook-listen", r.listen, "-webhook-url", hookURL)
		if len(w.reps) > 1 || supportsReplicas(w.cfg.Bot) {
			args = append(args, "-replica", r.name) // one name across its restarts
		}
	}
	if w.agents != nil {
		args = append(args, "-mcp-listen", w.agents.listenOf(r)) // each replica its own
	}
	if runTakes(w.cfg.Bot, "-poll-timeout") {
		args = append(args, "-poll-timeout", "1s")
	}
	return args
}

// startReplica runs replica r's `countersign run` and waits until it polls, or until its
// webhook listener answers and the balancer has it in rotation.
func (w *world) startReplica(r *replica) error {
	r.cmd = exec.Command(w.cfg.Bot, w.args(r)...)
	api := w.srv.URL()
	if w.webhook() {
		api = w.srv.ClientURL(r.name) // the calls of each replica, told apart
	}
	r.cmd.Env = append(w.childEnv(), "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_URL="+api,
		"COUNTERSIGN_POLL_TIMEOUT=1s", // the -poll-timeout of a binary built before the flag
		fmt.Sprintf("BOT_OPERATORS=%d", operator),
		fmt.Sprintf("BOT_APPROVERS=%d,%d", operator, approver))
	if w.webhook() {
		r.cmd.Env = append(r.cmd.Env, "TELEGRAM_WEBHOOK_SECRET="+webhookSecret)
	}
	if w.agents != nil {
		r.cmd.Env = append(r.cmd.Env, "COUNTERSIGN_MCP_TOKEN="+mcpToken)
	}
	if w.model != nil {
		r.cmd.Env = append(r.cmd.Env, "ANTHROPIC_API_KEY="+modelKey, "ANTHROPIC_BASE_URL="+w.model.srv.URL)
	}
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start the bot %s: %w", r.name, err)
	}
	r.exit, r.up = make(chan error, 1), true
	go func(c *exec.Cmd, exit chan error) { exit <- c.Wait() }(r.cmd, r.exit)
	if w.model != nil {
		w.model.restarted()
	}
	if !w.webhook() {
		polls := len(w.srv.CallsTo("getUpdates"))
		err := w.srv.WaitTimeout(60*time.Second, func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) > polls })
		if err != nil {
			return fmt.Errorf("the bot did not start polling: %w%s", err, logTail(r.log))
		}
		return nil
	}
	if err := w.listening(r, 60*time.Second); err != nil {
		return err
	}
	w.lb.add(r)
	return nil
}

// listening waits until r's webhook listener accepts connections, or r exits, or
// d passes. Nothing announces a listener across processes: it is dialled.
func (w *world) listening(r *replica, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		select {
		case err := <-r.exit:
			r.exit <- err
			return fmt.Errorf("the bot %s exited before it listened: %v", r.name, err)
		default:
		}
		if c, err := net.DialTimeout("tcp", r.listen, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the bot %s did not listen on %s within %s", r.name, r.listen, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killReplica ends r with SIGKILL: no code of its own runs.
func (w *world) killReplica(r *replica) {
	r.cmd.Process.Kill()
	r.exit <- <-r.exit // Wait has returned; keep the result for stop
	r.up = false
	w.sawDeath(r)
}

// down names the replicas not running now.
func (w *world) down() []string {
	var names []string
	for _, r := range w.reps {
		if !r.up {
			names = append(names, r.name)
		}
	}
	return names
}

// stop ends every running replica with SIGTERM and returns how they ended.
func (w *world) stop() error {
	var errs []error
	for _, r := range w.reps {
		if !r.up {
			continue
		}
		r.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, r := range w.reps {
		if !r.up {
			continue
		}
		select {
		case err := <-r.exit:
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", r.name, err))
			}
		case <-time.After(60 * time.Second):
			r.cmd.Process.Kill()
			errs = append(errs, fmt.Errorf("%s did not stop within 60s of SIGTERM", r.name))
		}
		r.up = false
	}
	return errors.Join(errs...)
}

// live are the replicas running now.
func (w *world) live() []*replica {
	var out []*replica
	for _, r := range w.reps {
		if r.up {
			out = append(out, r)
		}
	}
	return out
}

// replicaKill is one kill of the replica mode, drawn from the kills' own source,
// so that who is killed, with whom and for how long follows from the seed alone: SIGKILL a random live replica,
// now and then a second one with it (never the last one running), and start them
// again after a moment each. ok is false when fewer than two of several run (a
// kill would leave none): the kill waits. A lone replica is killed as the polling
// bot is, and back after its moment.
func (w *world) replicaKill() bool {
	up := w.live()
	if len(up) < 2 && len(w.reps) > 1 {
		return false
	}
	// Every kill draws alike, whoever is up, so that a replica slow to come back
	// changes this kill and not the ones after it.
	k := w.kills
	first, second, double := k.IntN(60), k.IntN(60), k.IntN(3) == 0
	under, back, again, beside := k.IntN(2) == 0, k.IntN(5), k.IntN(2) == 0, k.IntN(2) == 0
	downs := []time.Duration{w.downtime(k), w.downtime(k)}
	victims := []*replica{up[first%len(up)]}
	if len(up) > 2 && double {
		rest := slices.DeleteFunc(slices.Clone(up), func(r *replica) bool { return r == victims[0] })
		victims = append(victims, rest[second%len(rest)])
		w.note("two replicas down at once")
	}
	if under {
		w.underTheKillWebhook(victims[0], back, again)
	}
	for i, r := range victims {
		w.note("kill -9 and restart")
		if w.cfg.Verbose {
			fmt.Fprintf(w.out, "  kill -9 %s\n", r.name)
		}
		w.killReplica(r)
		down := downs[i]
		if len(victims) > 1 || len(w.reps) == 1 {
			down = min(down, 3*time.Second) // two down at once, or the only one: a moment
		}
		if down > 10*time.Second {
			w.note("a replica down past its lease")
		}
		r.back = time.Now().Add(down)
	}
	if beside {
		w.beside() // while they are down
	}
	return true
}

// downtime is how long a killed replica stays down: a moment, 0.5 to 3 s; or, a
// quarter of the time, 11 to 14 s, past the bot's default lease of 10 s, so that
// another replica takes over what it held (for a replica killed alone).
func (w *world) downtime(rnd *mrand.Rand) time.Duration {
	long, short := time.Duration(11000+rnd.IntN(3000)), time.Duration(500+rnd.IntN(2500))
	if rnd.IntN(4) == 0 {
		return long * time.Millisecond
	}
	return short * time.Millisecond
}

// restartDue starts again the killed replicas whose moment has come (all of
// them, when all is set).
func (w *world) restartDue(all bool) error {
	for _, r := range w.reps {
		if r.up || w.held(r) || (!all && time.Now().Before(r.back)) {
			continue
		}
		if err := w.startReplica(r); err != nil {
			if !w.mayRefuse() {
				return err
			}
			// Its name may still be held at the server by a session cut off,
			// until the server ends it: tried again in a moment.
			w.killReplica(r)
			w.note("replica start refused after a database fault, tried again")
			r.back = time.Now().Add(time.Second)
			if all {
				time.Sleep(time.Second)
				return w.restartDue(all)
			}
		}
	}
	return nil
}

// underTheKillWebhook is underTheKill behind a webhook: an operator's update
// (half a message delivered again, half a fresh /ops) is taken by victim, the
// replica about to be killed, and its answer is lost, so that Telegram delivers
// it again, to another.
func (w *world) underTheKillWebhook(victim *replica, back int, again bool) {
	w.mu.Lock()
	var c command
	if len(w.commands) > 0 {
		c = w.commands[max(0, len(w.commands)-1-back)]
	}
	w.mu.Unlock()
	seen := len(w.srv.WebhookDeliveries())
	w.lb.pinNext(victim)
	w.srv.InjectWebhook(telegramtest.WebhookFault{Action: telegramtest.WebhookReplyLost})
	if c.text != "" && again {
		w.note("update taken, its answer lost, just before the kill")
		w.push(c)
	} else {
		w.note("/ops taken, its answer lost, just before the kill")
		w.srv.PushMessage(operator, operator, "/ops")
	}
	var hit int64 // the update the fault fell on: the one pushed, or one queued before it
	lost := func(s *telegramtest.Server) bool {
		for _, d := range s.WebhookDeliveries()[seen:] {
			if d.Fault == telegramtest.WebhookReplyLost {
				hit = d.UpdateID
				return true
			}
		}
		return false
	}
	if w.srv.WaitTimeout(2*time.Second, lost) != nil || w.lb.tookLast(hit) != victim {
		w.note("an update under the kill taken by another replica, or not in time")
	}
}

// sender is the replica that made the last sendMessage call of text to chat, nil
// when none did or it is down.
func (w *world) sender(chat int64, text string) *replica {
	calls := w.srv.CallsTo("sendMessage")
	for i := len(calls) - 1; i >= 0; i-- {
		if c := calls[i]; c.ChatID == chat && c.Params["text"] == text {
			for _, r := range w.reps {
				if r.name == c.Client && r.up {
					return r
				}
			}
			return nil
		}
	}
	return nil
}

// webhookFault has the fake Telegram deliver the next update again: twice at
// once (two replicas may take it together), or again after the answer of the
// replica that took it was lost.
func (w *world) webhookFault() {
	if w.rnd.IntN(2) == 0 {
		w.note("webhook: an update delivered twice at once")
		w.srv.InjectWebhook(telegramtest.WebhookFault{Action: telegramtest.WebhookTwiceAtOnce})
		return
	}
	w.note("webhook: an update taken, its answer lost")
	w.srv.InjectWebhook(telegramtest.WebhookFault{Action: telegramtest.WebhookReplyLost})
}

// countDeliveries adds the webhook's figures to the report: updates taken, and
// deliveries that failed, by why.
func (w *world) countDeliveries(rep *Report) {
	for _, d := range w.srv.WebhookDeliveries() {
		switch {
		case d.Fault == telegramtest.WebhookReplyLost:
			rep.Actions["webhook: taken, the answer lost, delivered again"]++
		case d.Err == "":
			rep.Actions["webhook: updates taken"]++
		case strings.Contains(d.Err, "connection refused"):
			rep.Actions["webhook: deliveries refused, another replica tried"]++
		case strings.Contains(d.Err, errNoBackend.Error()):
			rep.Actions["webhook: deliveries with no replica in rotation"]++
		default:
			rep.Actions["webhook: deliveries failed otherwise"]++
		}
	}
}

// logTail is the end of a bot's log, for an error that says why it did not
// start; "" when there is none to read.
func logTail(f *os.File) string {
	if f == nil {
		return ""
	}
	b, err := os.ReadFile(f.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "; its log ends:\n" + string(b)
}
