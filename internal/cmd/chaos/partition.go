package main

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/partition"
	"github.com/countersign/countersign/journal"
)

// The database's faults, among replicas on PostgreSQL: each replica reaches the
// database through a proxy of its own (internal/partition), which the run cuts
// now and then, for one replica at a time, with a reset (every connection ended
// at once, new ones refused) or a silent hang (nothing passes; the server never
// hears the replica's connections close), and heals after a while: sometimes
// before the replica notices, sometimes past the lease. With the run's own
// server (-own-postgres) the run also restarts the server, cleanly or as a
// crash. A replica that finds its name lock lost exits; the run restarts it as
// it does a killed one, once the database is back for it.

// partitionGrace is how long after a cut a replica's request may still reach
// Telegram: the fence proves a lease with a fifth of it (2 s of the default
// 10 s) left right before the write, and only the write itself comes after.
const partitionGrace = 2 * time.Second

// dbFaults is what the run does to the database and what it saw.
type dbFaults struct {
	rnd     *mrand.Rand
	proxies map[string]*partition.Proxy // by replica name
	pg      *pgServer                   // nil: the server is not the run's own
	every   time.Duration               // between two disturbances
	next    time.Time
	left    struct{ cuts, restarts int }
	cut     *cutRecord // the cut that lasts now
	cuts    []*cutRecord
	restart []*restartRecord
	calm    time.Time // until when a replica's start may be refused (a name the server still holds for a session cut off)
	log     []delivery
	deaths  map[string][]time.Time // when each replica was killed or seen exited
}

// cutRecord is one partition between a replica and the database.
type cutRecord struct {
	rep        string
	mode       partition.Mode
	at, healed time.Time
	until      time.Time // when it is to heal
	committing []held    // the replica's operations committing at the cut
	exited     time.Time // when the run saw the replica exit during the cut, zero if it did not
}

// held is an operation committing at a disturbance, and the replica that held it.
type held struct {
	id, by string
	seen   time.Time // when it was read committing
}

// restartRecord is one restart of the run's own server: asked at at, down
// from down (its stop returned) to back (its start was asked), up again at up.
type restartRecord struct {
	immediate          bool
	at, down, back, up time.Time
	committing         []held // operations committing at the restart
}

// delivery is one webhook delivery the balancer made, as the checks read it.
type delivery struct {
	rep          string
	update       int64
	began, ended time.Time
	taken        bool
}

// newDBFaults plans cuts partitions and restarts of the server (with the run's
// own server) over the storm, spread evenly, their kinds and lengths drawn
// from a source of their own.
func newDBFaults(cfg Config, pg *pgServer) *dbFaults {
	f := &dbFaults{rnd: mrand.New(mrand.NewPCG(uint64(cfg.Seed), 0xc07)), proxies: map[string]*partition.Proxy{}, pg: pg,
		deaths: map[string][]time.Time{}}
	f.left.cuts = cfg.Partitions
	if pg != nil {
		f.left.restarts = cfg.PGRestarts
	}
	n := f.left.cuts + f.left.restarts
	f.every = cfg.Duration / time.Duration(n+1)
	return f
}

// journalOf is the journal URL replica r is started with: through its proxy
// when the run cuts partitions.
func (w *world) journalOf(r *replica) string {
	if w.db == nil || w.db.left.cuts == 0 && len(w.db.cuts) == 0 {
		return w.journal
	}
	p := w.db.proxies[r.name]
	if p == nil {
		var err error
		if p, err = partition.New(hostOf(w.journal)); err != nil {
			fmt.Fprintf(w.out, "chaos: a proxy for %s: %v (it reaches the database directly)\n", r.name, err)
			return w.journal
		}
		// A stranded session's server end is let go after a while, as a real
		// server's keepalive would, so that a long run on a shared server does
		// not spend its connections on them.
		p.Linger = 30 * time.Second
		w.db.proxies[r.name] = p
	}
	u, err := url.Parse(w.journal)
	if err != nil {
		return w.journal
	}
	u.Host = p.Addr()
	return u.String()
}

// disturbDatabase makes the next disturbance of the database when its time has
// come, and heals a cut whose time is up.
func (w *world) disturbDatabase(ctx context.Context, start, now time.Time) {
	f := w.db
	if f == nil {
		return
	}
	if c := f.cut; c != nil {
		if now.After(c.until) {
			w.heal()
		}
		return
	}
	if f.next.IsZero() {
		f.next = start.Add(f.every)
	}
	if now.Before(f.next) || f.left.cuts+f.left.restarts == 0 {
		return
	}
	// Drawn alike whatever happens, so that one disturbance's outcome changes
	// it and not the ones after it.
	restart := f.rnd.IntN(f.left.cuts+f.left.restarts) < f.left.restarts
	pick, reset, long, immediate := f.rnd.IntN(60), f.rnd.IntN(2) == 0, f.rnd.IntN(3) > 0, f.rnd.IntN(2) == 0
	short := time.Duration(1500+f.rnd.IntN(2000)) * time.Millisecond
	length := time.Duration(6000+f.rnd.IntN(7000)) * time.Millisecond
	if restart {
		w.restartPostgres(ctx, immediate, short)
		f.left.restarts--
		f.next = f.next.Add(f.every)
		return
	}
	up := w.live()
	if len(up) < 2 {
		return // a cut waits until another replica runs beside its victim
	}
	// A replica with a request in Telegram's hands (a slow or hung answer) is
	// cut off first: its commit is on the wire at the cut.
	if busy := w.sending(up); len(busy) > 0 {
		up = busy
	}
	r := up[pick%len(up)]
	mode := map[bool]partition.Mode{true: partition.Reset, false: partition.Hang}[reset]
	if !long {
		length = short
	}
	c := &cutRecord{rep: r.name, mode: mode, until: now.Add(length), committing: w.committingOf(r.name)}
	w.note(fmt.Sprintf("partition (%s) between a replica and the database", mode))
	if length > 10*time.Second {
		w.note("partition past the lease")
	}
	if w.cfg.Verbose {
		fmt.Fprintf(w.out, "  cut %s off the database (%s) for %s\n", r.name, mode, length)
	}
	f.proxies[r.name].Cut(mode)
	c.at = time.Now()
	f.cut, f.cuts = c, append(f.cuts, c)
	f.left.cuts--
	f.next = f.next.Add(f.every)
}

// disturbing reports whether a replica is cut off the database now, or a
// disturbance of the database is still to be made.
func (w *world) disturbing() bool {
	return w.db != nil && (w.db.cut != nil || w.db.left.cuts+w.db.left.restarts > 0)
}

// sending are the replicas of up with a request to a target chat that Telegram
// has not answered yet.
func (w *world) sending(up []*replica) []*replica {
	var out []*replica
	for _, r := range up {
		for _, c := range w.srv.Calls() {
			if c.Client == r.name && c.ChatID >= firstChat && !c.Done {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// heal ends the cut that lasts, if one does.
func (w *world) heal() {
	f := w.db
	if f == nil || f.cut == nil {
		return
	}
	c := f.cut
	f.proxies[c.rep].Heal()
	c.healed, f.cut = time.Now(), nil
	f.calm = c.healed.Add(time.Minute)
	if c.exited.IsZero() {
		w.note("partition healed, the replica carried on")
	} else {
		w.note("partition healed after the replica exited")
	}
}

// restartPostgres restarts the run's own server, down for a moment (1.5 to
// 3.5 s): every replica's sessions end, and with them their name locks.
func (w *world) restartPostgres(ctx context.Context, immediate bool, down time.Duration) {
	f := w.db
	rec := &restartRecord{immediate: immediate, committing: w.committingOf("")}
	w.note(map[bool]string{false: "postgres restart (fast)", true: "postgres restart (immediate, a crash)"}[immediate])
	rec.at = time.Now()
	if err := f.pg.stop(ctx, immediate); err != nil {
		fmt.Fprintf(w.out, "chaos: stop the server: %v\n", err)
	}
	rec.down = time.Now()
	time.Sleep(down) // the server stays down: the replicas meet it so
	rec.back = time.Now()
	if err := f.pg.start(ctx); err != nil {
		fmt.Fprintf(w.out, "chaos: start the server: %v\n", err)
	}
	rec.up = time.Now()
	f.calm = rec.up.Add(time.Minute)
	f.restart = append(f.restart, rec)
}

// committingOf are the operations committing now that replica name holds (all
// of them for ""), read beside the replicas.
func (w *world) committingOf(name string) []held {
	seen := time.Now()
	j, done, err := w.openJournal()
	if err != nil {
		return nil
	}
	defer done()
	ops, err := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Committing}})
	if err != nil {
		return nil
	}
	var out []held
	for _, op := range ops {
		if name == "" || op.ClaimedBy == name {
			out = append(out, held{id: op.ID, by: op.ClaimedBy, seen: seen})
		}
	}
	return out
}

// sawDeath records that replica r stopped (killed, or seen exited).
func (w *world) sawDeath(r *replica) {
	if w.db != nil {
		w.db.deaths[r.name] = append(w.db.deaths[r.name], time.Now())
	}
}

// deathAfter is the first time replica name was seen stopped after t, zero
// when it was not.
func (f *dbFaults) deathAfter(name string, t time.Time) time.Time {
	for _, d := range f.deaths[name] {
		if d.After(t) {
			return d
		}
	}
	return time.Time{}
}

// reap finds the replicas that exited on their own (a replica that lost its
// name lock stops, for its supervisor to start it again), takes them out of
// the rotation and has them started again after a moment, as killed ones are.
func (w *world) reap() {
	for _, r := range w.reps {
		if !r.up {
			continue
		}
		var err error
		select {
		case err = <-r.exit:
			r.exit <- err
		default:
			continue
		}
		r.up = false
		w.lb.remove(r)
		w.sawDeath(r)
		r.back = time.Now().Add(500 * time.Millisecond)
		log, _ := os.ReadFile(r.log.Name())
		if strings.Contains(string(tail(log, 4000)), "lost its name lock") {
			w.note("replica exited: its name lock lost")
		} else {
			w.note("replica exited otherwise")
			fmt.Fprintf(w.out, "chaos: %s exited: %v%s\n", r.name, err, logTail(r.log))
		}
		if c := w.db.cut; c != nil && c.rep == r.name && c.exited.IsZero() {
			c.exited = time.Now()
		}
	}
}

// held reports whether replica r must wait before it starts again: the
// database is out of its reach.
func (w *world) held(r *replica) bool {
	return w.db != nil && w.db.cut != nil && w.db.cut.rep == r.name
}

// mayRefuse reports whether a replica's start may fail now for what the run
// did to the database a moment ago: its name lock still held by a session cut
// off, until the server ends it.
func (w *world) mayRefuse() bool {
	return w.db != nil && time.Now().Before(w.db.calm)
}

// logDelivery records a webhook delivery for the checks.
func (w *world) logDelivery(r *replica, update int64, began time.Time, taken bool) {
	if w.db == nil {
		return
	}
	w.lb.mu.Lock()
	defer w.lb.mu.Unlock()
	w.db.log = append(w.db.log, delivery{rep: r.name, update: update, began: began, ended: time.Now(), taken: taken})
}

// closeProxies heals any cut and closes the proxies, after the replicas stopped.
func (w *world) closeProxies() {
	if w.db == nil {
		return
	}
	w.heal()
	for _, p := range w.db.proxies {
		p.Close()
	}
}

// databaseInvariants are the promises under the database's faults: a replica
// out of reach of the database commits nothing and takes no update; what it
// had on the wire is settled by the rules of a dead replica's commits and
// never sent again.
func (w *world) databaseInvariants(ctx context.Context, j *journal.Journal, rep *Report) []Invariant {
	f := w.db
	if f == nil {
		return nil
	}
	for _, c := range f.cuts {
		rep.Actions["partition: commits on the wire at the cut"] += len(c.committing)
	}
	for _, r := range f.restart {
		rep.Actions["postgres restart: commits on the wire"] += len(r.committing)
	}
	return []Invariant{w.nothingSentCutOff(), w.nothingTakenCutOff(), w.wireSettled(ctx, j, rep)}
}

// outage is a span in which replica rep ("" for all) could not reach the
// database.
type outage struct {
	rep      string
	from, to time.Time
	what     string
}

func (f *dbFaults) outages() []outage {
	var out []outage
	for _, c := range f.cuts {
		to := c.healed
		if to.IsZero() {
			to = time.Now()
		}
		out = append(out, outage{rep: c.rep, from: c.at, to: to, what: fmt.Sprintf("%s cut off (%s) %s", c.rep, c.mode, c.at.Format("15:04:05.000"))})
	}
	for _, r := range f.restart {
		// Surely down only between its stop's return and its start's call.
		out = append(out, outage{from: r.down, to: r.back, what: "the server down " + r.down.Format("15:04:05.000")})
	}
	return out
}

// nothingSentCutOff: no request to a target chat left a replica while it was
// out of reach of the database, past the fence's grace.
func (w *world) nothingSentCutOff() Invariant {
	in := Invariant{Name: "no commit sent by a replica out of reach of the database"}
	for _, o := range w.db.outages() {
		for _, c := range w.srv.Calls() {
			// A read (getChat, to settle a pin) changes nothing: only writes are commits.
			if c.ChatID < firstChat || strings.HasPrefix(c.Method, "get") || (o.rep != "" && c.Client != o.rep) {
				continue
			}
			if c.Time.After(o.from.Add(partitionGrace)) && c.Time.Before(o.to) {
				in.Broken = append(in.Broken, fmt.Sprintf("%s by %s at %s, %s", c.Method, c.Client, c.Time.Format("15:04:05.000"), o.what))
			}
		}
	}
	return in
}

// nothingTakenCutOff: no replica answered a webhook delivery it received while
// out of reach of the database: an update is stored before its answer.
func (w *world) nothingTakenCutOff() Invariant {
	in := Invariant{Name: "no update taken by a replica out of reach of the database"}
	w.lb.mu.Lock()
	log := slices.Clone(w.db.log)
	w.lb.mu.Unlock()
	for _, o := range w.db.outages() {
		for _, d := range log {
			if d.taken && (o.rep == "" || d.rep == o.rep) && !d.began.Before(o.from) && d.ended.Before(o.to) {
				in.Broken = append(in.Broken, fmt.Sprintf("update %d taken by %s at %s, %s", d.update, d.rep, d.ended.Format("15:04:05.000"), o.what))
			}
		}
	}
	return in
}

// wireSettled: each commit a replica had on the wire when the database went out
// of its reach left committing by its sender's own record of the answer or,
// once the sender was dead (it exited, or was killed), as unknown by a dead
// replica's rules (lease_expired by another, crash_recovery by its name back);
// and none was sent again without a retry's new attempt.
func (w *world) wireSettled(ctx context.Context, j *journal.Journal, rep *Report) Invariant {
	in := Invariant{Name: "commits on the wire when the database went away settled by the replicas' rules, never sent again"}
	check := func(h held, what string) {
		id, exited := h.id, w.db.deathAfter(h.by, h.seen)
		ts, err := j.Transitions(ctx, id)
		if err != nil {
			in.Broken = append(in.Broken, fmt.Sprintf("%s: %v", id, err))
			return
		}
		i := slices.IndexFunc(ts, func(t journal.Transition) bool {
			return t.From == journal.Committing && !t.At.Before(h.seen.Add(-10*time.Millisecond))
		})
		if i < 0 {
			return // still committing: everyOperationEnded reports it
		}
		out := ts[i]
		byRule := out.To == journal.Unknown && (out.Reason == journal.ReasonLeaseExpired || out.Reason == journal.ReasonCrashRecovery)
		rep.Actions["database fault: a commit on the wire left committing "+out.Reason+" to "+string(out.To)]++
		if !exited.IsZero() && out.At.After(exited) && !byRule {
			in.Broken = append(in.Broken, fmt.Sprintf("%s (%s): its sender exited, then %s -> %s (%s)", id, what, out.From, out.To, out.Reason))
		}
		again := 0
		for _, t := range ts[i+1:] {
			if t.To == journal.Committing {
				again++
			}
		}
		op, err := j.Operation(ctx, id)
		if err != nil {
			return
		}
		var chat int64
		fmt.Sscan(op.Payload.Target, &chat)
		sent := 0
		for _, c := range w.srv.CallsTo("sendMessage") {
			// The journal keeps times to the millisecond: the request that a
			// record of its answer followed within one may read as after it.
			if c.ChatID == chat && c.Params["text"] == op.Payload.Text && c.Time.After(out.At.Add(time.Millisecond)) {
				sent++
			}
		}
		if sent > again {
			in.Broken = append(in.Broken, fmt.Sprintf("%s (%s): sent %d times after %s, with %d new attempts", id, what, sent, out.Reason, again))
		}
	}
	for _, c := range w.db.cuts {
		for _, h := range c.committing {
			check(h, c.rep+" cut off")
		}
	}
	for _, r := range w.db.restart {
		for _, h := range r.committing {
			check(h, "the server restarted")
		}
	}
	return in
}
