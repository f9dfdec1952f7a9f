package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/internal/botbuild"
	"github.com/countersign/countersign/internal/pgschema"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// Config is one chaos run.
type Config struct {
	Seed     int64
	Ops      int
	Kills    int
	Duration time.Duration
	Chats    int
	Bot      string // the bot binary; "" builds ./cmd/bot
	Policies string
	Verbose  bool
	// ModelShare is the share of the sends made as plain text, for a model turn
	// (0: commands only, and no model configured).
	ModelShare float64
	// Actions is the share of the calls that are not text sends: photos,
	// edits, deletes, pins and unpins by chat command; albums and declared HTTP
	// tools (against a fake service) by the MCP callers. 0: text sends only.
	Actions float64
	// FullDisk mounts the data folder on a small tmpfs and fills it at times
	// (root only; without mount the run says so and goes on without).
	FullDisk bool
	// MCPShare is the share of the sends made by outside agents over MCP: half
	// through `countersign mcp` over stdio beside the bot, half over HTTP to its
	// -mcp-listen (0: no MCP callers, and no -mcp-listen).
	MCPShare float64
	// Replicas is how many `countersign run` processes share the journal: 1 (or 0) is one
	// bot; more need Journal, and take updates by webhook behind a balancer.
	Replicas int
	// Journal is a postgres:// URL: the run makes a schema of its own in that
	// database, its replicas take updates by webhook, and it drops the schema at
	// the end unless a promise broke. "" is one polling bot on SQLite.
	Journal string
	// Partitions is how many times the run cuts one replica off the database
	// (a reset or a silent hang, through a proxy of its own) and heals it.
	Partitions int
	// OwnPostgres starts a PostgreSQL cluster of the run's own (initdb and
	// pg_ctl, as the postgres user when run as root) and uses it instead of
	// Journal, so that it can be restarted; PGRestarts is how many times it is,
	// cleanly or as a crash.
	OwnPostgres bool
	PGRestarts  int
}

// The people and chats of a run.
const (
	operator  = 100 // operator and approver
	approver  = 101 // approver
	stranger  = 999
	firstChat = 2000 // targets that need a tap
	autoChat  = 3000 // targets an auto_approve rule covers
	autoChats = 3
	token     = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
)

// world is the fake Telegram, the bot process and what the run did to them.
type world struct {
	cfg       Config
	rnd       *rand.Rand
	srv       *telegramtest.Server
	dir       string // data folder: the bot's, or the replicas' folders and their vault
	out       io.Writer
	reps      []*replica // the bot processes; one unless Replicas > 1
	lb        *balancer  // nil: the bot polls
	kills     *rand.Rand // the replica kills' choices, apart from the timing-bound rest
	journal   string     // the PostgreSQL URL with the run's schema, "" on SQLite
	j         *journal.Journal
	db        *dbFaults      // nil: the database is left alone (SQLite, or no partitions nor restarts)
	policies  string         // the run's policy file
	count     map[string]int // actions and faults, by name
	model     *model         // nil: no model configured
	disk      *disk          // nil: no full disk in the mix
	agents    *agents        // nil: no MCP callers
	mix       *mix           // nil: text sends only
	codes     *codes         // the people's TOTP keys and the codes given; nil: no step-up (no mix)
	fullUntil time.Time      // when the filled disk is freed
	// auditChecks counts the audit trail's checks; auditFaults are what they found.
	auditChecks int
	auditFaults []string

	mu       sync.Mutex
	commands []command // every operator command pushed, in order
	nextMsg  int
}

// command is one /send the operator typed: its text is unique in the run.
type command struct {
	msgID  int
	target int64
	text   string
	model  bool   // plain text for a model turn, not /send
	line   string // a command that is not /send (/photo, /edit, ...), as typed
}

// Run makes one chaos run and prints its report to out. The error is for a run
// that could not be set up; broken promises are in the report.
func Run(ctx context.Context, cfg Config, out io.Writer) (rep *Report, err error) {
	if cfg.Chats < 1 || cfg.Ops < 1 {
		return nil, errors.New("-ops and -chats must be positive")
	}
	var pg *pgServer // the run's own server, to restart
	if cfg.OwnPostgres {
		if pg, err = startPostgres(ctx); err != nil {
			return nil, fmt.Errorf("-own-postgres: %w", err)
		}
		defer pg.remove()
		cfg.Journal = pg.URL()
	}
	if cfg.Replicas > 1 && !journal.IsPostgres(cfg.Journal) {
		return nil, errors.New("-replicas above 1 needs -journal with a postgres:// URL (or COUNTERSIGN_DATABASE_URL)")
	}
	root, err := os.MkdirTemp("", "countersign-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	w := &world{cfg: cfg, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)), dir: filepath.Join(root, "data"),
		out: out, count: map[string]int{}, nextMsg: 1_000_000}
	if w.cfg.Bot == "" {
		if w.cfg.Bot, err = botbuild.Build(root); err != nil {
			return nil, err
		}
	}
	if cfg.Replicas > 1 && !supportsReplicas(w.cfg.Bot) {
		return nil, ErrNoReplicas
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return nil, err
	}
	if cfg.Journal != "" {
		if cfg.FullDisk {
			fmt.Fprintln(out, "chaos: the journal is on PostgreSQL: no full disk (a tmpfs is for SQLite) in this run")
		}
		cfg.FullDisk, w.cfg.FullDisk = false, false
		var schema string
		if w.journal, schema, err = pgschema.Fresh(ctx, cfg.Journal, fmt.Sprintf("chaos_%d_", uint64(cfg.Seed))); err != nil {
			return nil, err
		}
		// Opened first: the journal's migrations run once, before any replica starts.
		if w.j, err = journal.Open(ctx, w.journal); err != nil {
			pgschema.Drop(cfg.Journal, schema)
			return nil, err
		}
		defer func() {
			w.j.Close()
			if rep == nil || rep.OK() {
				if err := pgschema.Drop(cfg.Journal, schema); err != nil {
					fmt.Fprintf(out, "chaos: drop schema %s: %v\n", schema, err)
				}
				return
			}
			fmt.Fprintf(out, "chaos: the run's journal is kept in schema %s of %s\n", schema, journal.Where(cfg.Journal))
		}()
		w.lb = newBalancer(cfg.Seed)
		w.kills = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x4b111))
		if cfg.Partitions > 0 || (pg != nil && cfg.PGRestarts > 0) {
			w.db = newDBFaults(cfg, pg)
			w.lb.logged = w.logDelivery
			defer w.closeProxies()
		}
	}
	if cfg.FullDisk {
		d, err := mountDisk(w.dir)
		if err != nil {
			fmt.Fprintf(out, "chaos: no full disk in this run: %v\n", err)
		} else {
			w.disk = d
			defer d.unmount()
		}
	}
	if cfg.ModelShare > 0 {
		w.model = newModel(cfg.Seed)
		defer w.model.close()
	}
	if cfg.Actions > 0 {
		if w.mix, err = newMix(root); err != nil {
			return nil, err
		}
		defer w.mix.close()
	}
	policies, err := w.writePolicy(root)
	if err != nil {
		return nil, err
	}
	w.policies = policies
	if cfg.MCPShare > 0 {
		if w.agents, err = newAgents(ctx, w, root); err != nil {
			return nil, err
		}
	}
	if err := w.newReplicas(root); err != nil {
		return nil, err
	}
	if w.mix != nil {
		if err := w.enrol(); err != nil { // on the machine, before the bot starts
			return nil, err
		}
	}
	if w.agents != nil && w.webhook() {
		if err := w.agents.mcpAddrs(w.reps); err != nil {
			return nil, err
		}
	}
	for _, r := range w.reps {
		defer r.log.Close()
	}
	// Telegram's flood limits, as strict as the fake server makes them (no burst
	// within a chat): the bot's limiter, shared by the replicas through the
	// journal, must keep every send under them (floodKept).
	w.srv = telegramtest.New(telegramtest.Options{Token: token, Flood: &flood})
	defer w.srv.Close()
	fmt.Fprintf(out, "chaos: seed %d, %d calls over %d chats (%.0f%% not text sends; of the sends %.0f%% by model turns, %.0f%% by MCP callers), %d kills, full disk %v, faults for %s\n",
		cfg.Seed, cfg.Ops, cfg.Chats, 100*cfg.Actions, 100*cfg.ModelShare, 100*w.cfg.MCPShare, cfg.Kills, w.disk != nil, cfg.Duration)
	if w.webhook() {
		fmt.Fprintf(out, "chaos: %d replicas on PostgreSQL (%s), updates by webhook through the balancer\n", len(w.reps), journal.Where(cfg.Journal))
		delivering, stopDelivery := context.WithCancel(ctx)
		defer stopDelivery()
		go w.srv.DeliverWebhook(delivering, w.lb.deliver)
	}
	began := time.Now()
	if err := w.restartDue(true); err != nil {
		w.stop()
		return nil, err
	}
	w.storm(ctx, policies)
	w.windDown(ctx, policies)
	if w.agents != nil {
		w.agents.finish() // their last look, while the bot still runs
	}
	if err := w.stop(); err != nil {
		fmt.Fprintf(out, "chaos: the bot's last stop: %v\n", err)
	}
	if w.disk != nil {
		w.disk.free() // the checks below open the journal, as a person would
	}
	rep = w.check()
	if w.model != nil {
		for k, v := range w.model.counts() {
			rep.Actions[k] += v
		}
		rep.ModelRequests = len(w.model.srv.Requests())
	}
	if a := w.agents; a != nil {
		for k, v := range a.count {
			rep.Actions[k] += v
		}
		rep.MCPCalls, rep.MCPCommits, rep.MCPReconnects = a.callsN, a.commits, a.count["mcp: reconnect (http)"]+a.count["mcp: reconnect (stdio)"]
	}
	rep.Elapsed, rep.FullDisk = time.Since(began), w.disk != nil
	if w.lb != nil {
		w.countDeliveries(rep)
	}
	// How often the full disk bit: writes SQLite or the vault were refused.
	logs := w.logs()
	rep.Actions["bot log: a write refused by the full disk"] = strings.Count(logs, "disk is full") +
		strings.Count(logs, "no space left on device")
	rep.Print(out)
	last, kept := w.keepLogs()
	if !rep.OK() {
		// The data folder goes with the log, to read the journal of what broke.
		data := filepath.Join(os.TempDir(), fmt.Sprintf("countersign-chaos-%d-data", cfg.Seed))
		os.RemoveAll(data)
		if out, err := exec.Command("cp", "-a", w.dir, data).CombinedOutput(); err != nil {
			fmt.Fprintf(w.out, "chaos: keep the data folder: %v %s\n", err, out)
		}
		fmt.Fprintf(out, "--- bot log (last 4000 bytes; all of it in %s; the data folder in %s) ---\n%s\n", kept, data, tail(last, 4000))
	} else {
		fmt.Fprintf(out, "the bot's log: %s\n", kept)
	}
	return rep, nil
}

// writePolicy is the starting policy with a short approval_ttl, so that approvals
// left alone expire within the run, and an auto_approve rule for a few chats.
func (w *world) writePolicy(dir string) (string, error) {
	src, err := os.ReadFile(w.cfg.Policies)
	if err != nil {
		return "", err
	}
	var chats []string
	for i := range autoChats {
		chats = append(chats, fmt.Sprintf("%q", fmt.Sprint(autoChat+i)))
	}
	p := string(src)
	p = strings.Replace(p, "approval_ttl: 24h", "approval_ttl: 40s", 1)
	p = strings.Replace(p, "auto_approve: []", "auto_approve:\n  - tool: commit_send_message\n    chats: ["+strings.Join(chats, ", ")+"]", 1)
	p = strings.Replace(p, "duplicate_window: 24h", "duplicate_window: 0s", 1)
	// A stall is dropped after 2 s instead of 45, so that stalls fit in the run.
	p = strings.Replace(p, "stall_warning: 10s", "stall_warning: 1s", 1)
	p = strings.Replace(p, "stall_abort: 45s", "stall_abort: 2s", 1)
	if !strings.Contains(p, "approval_ttl: 40s") || !strings.Contains(p, "chats: [") {
		return "", fmt.Errorf("%s: approval_ttl or auto_approve not in the expected form", w.cfg.Policies)
	}
	if w.mix != nil {
		const after = "  commit_publish_post:\n    side_effect: committed\n    approval: required\n"
		if !strings.Contains(p, after) {
			return "", fmt.Errorf("%s: commit_publish_post not in the expected form", w.cfg.Policies)
		}
		p = strings.Replace(p, after, after+w.mix.policy(), 1)
		const roots = "files:\n  roots: []\n"
		if !strings.Contains(p, roots) {
			return "", fmt.Errorf("%s: files.roots not in the expected form", w.cfg.Policies)
		}
		p = strings.Replace(p, roots, fmt.Sprintf("files:\n  roots: [%q]\n", w.mix.root), 1)
		p += quorumPolicy() + stepUpPolicy()
	}
	path := filepath.Join(dir, "policies.yaml")
	return path, os.WriteFile(path, []byte(p), 0o600)
}

// logs are the bot processes' logs, one after the other.
func (w *world) logs() string {
	var b strings.Builder
	for _, r := range w.reps {
		logs, _ := os.ReadFile(r.log.Name())
		b.Write(logs)
	}
	return b.String()
}

// keepLogs copies the bot processes' logs out of the run's folder, and returns
// the last of them and where they are.
func (w *world) keepLogs() ([]byte, string) {
	var logs []byte
	var kept []string
	for _, r := range w.reps {
		logs, _ = os.ReadFile(r.log.Name())
		name := fmt.Sprintf("countersign-chaos-%d.log", w.cfg.Seed)
		if w.webhook() {
			name = fmt.Sprintf("countersign-chaos-%d-%s.log", w.cfg.Seed, r.name)
		}
		kept = append(kept, filepath.Join(os.TempDir(), name))
		os.WriteFile(kept[len(kept)-1], logs, 0o600)
	}
	return logs, strings.Join(kept, " ")
}

// sendCommand pushes "/send target text" from the operator as a new message, and
// remembers it, so that a second delivery of the same message can be pushed.
func (w *world) sendCommand(target int64, text string, model bool) command {
	w.mu.Lock()
	w.nextMsg++
	c := command{msgID: w.nextMsg, target: target, text: text, model: model}
	w.commands = append(w.commands, c)
	w.mu.Unlock()
	w.push(c)
	return c
}

// push delivers the update that carries c (again, when it was pushed before), and
// returns its update_id.
func (w *world) push(c command) int64 {
	msg := map[string]any{
		"message_id": c.msgID, "date": time.Now().Unix(), "text": fmt.Sprintf("/send %d %s", c.target, c.text),
		"from":     map[string]any{"id": operator, "is_bot": false, "first_name": "Olga"},
		"chat":     map[string]any{"id": operator, "type": "private", "first_name": "Olga"},
		"entities": []map[string]any{{"type": "bot_command", "offset": 0, "length": 5}},
	}
	if c.model {
		msg["text"] = ask(c.target, c.text)
		delete(msg, "entities")
	}
	if c.line != "" {
		word, _, _ := strings.Cut(c.line, " ")
		msg["text"] = c.line
		msg["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": len(word)}}
	}
	return w.srv.PushUpdate(map[string]any{"message": msg})
}

func (w *world) note(action string) {
	w.count[action]++
	if w.cfg.Verbose {
		fmt.Fprintf(w.out, "  %s\n", action)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
