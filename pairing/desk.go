package pairing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/countersign/countersign/policy"
)

// MaxPending is how many people may hold a pending code at once: a stranger
// who finds the bot first cannot keep its owner from getting one, and a flood
// of strangers gets no more than this.
const MaxPending = 3

// Desk gives codes on behalf of a running bot whose policy names no operator,
// and notices when one is confirmed. It is safe for concurrent use.
type Desk struct {
	dir   string
	ttl   time.Duration
	clock func() time.Time
	every time.Duration

	mu     sync.Mutex
	offers map[policy.UserID]offer
}

// offer is a code the desk gave; the code itself stays in memory only, so
// that a person who asks again is shown the same one.
type offer struct {
	code, name string
	expires    time.Time
}

// Offer is what a person who asked is told: the code to confirm and until
// when. Fresh is false when it is the code they were given before.
type Offer struct {
	Code    string
	Expires time.Time
	Fresh   bool
}

// Options tune a Desk; the zero value is the default.
type Options struct {
	TTL   time.Duration    // how long a code holds (default TTL)
	Clock func() time.Time // default time.Now
	Every time.Duration    // how often Wait looks for a confirmation (default 250ms)
}

// Open returns the desk of the data folder dir. Codes a previous process gave
// are dropped: a person asks again after a restart.
func Open(dir string, o Options) (*Desk, error) {
	if o.TTL <= 0 {
		o.TTL = TTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Every <= 0 {
		o.Every = 250 * time.Millisecond
	}
	if err := Drop(dir); err != nil {
		return nil, err
	}
	return &Desk{dir: dir, ttl: o.TTL, clock: o.Clock, every: o.Every, offers: map[policy.UserID]offer{}}, nil
}

// Drop removes the codes pending on the data folder dir, if any: a bot that
// now has an operator offers none, and a code it gave while it had none must
// not pair anyone after.
func Drop(dir string) error {
	if err := os.Remove(filepath.Join(dir, CodesFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pairing: %w", err)
	}
	return nil
}

// Offer gives user (name is how Telegram shows them) a code to confirm, or
// the one they hold while it is valid. It returns ErrPaired once someone
// paired on the data folder, and ErrBusy while MaxPending others hold codes.
func (d *Desk) Offer(user policy.UserID, name string) (Offer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok, err := Load(d.dir); err != nil || ok {
		return Offer{}, cmpErr(err, ErrPaired)
	}
	now := d.clock()
	for u, o := range d.offers {
		if !now.Before(o.expires) {
			delete(d.offers, u)
		}
	}
	if o, ok := d.offers[user]; ok {
		return Offer{Code: o.code, Expires: o.expires}, nil
	}
	if len(d.offers) >= MaxPending {
		return Offer{}, ErrBusy
	}
	code, err := newCode()
	if err != nil {
		return Offer{}, err
	}
	o := offer{code: code, name: name, expires: now.Add(d.ttl)}
	d.offers[user] = o
	if err := d.save(); err != nil {
		delete(d.offers, user)
		return Offer{}, err
	}
	return Offer{Code: code, Expires: o.expires, Fresh: true}, nil
}

// save writes the pending codes' hashes to pairing.json, replacing it whole.
func (d *Desk) save() error {
	codes := make([]pending, 0, len(d.offers))
	for u, o := range d.offers {
		codes = append(codes, pending{User: u, Name: o.name, Hash: fmt.Sprintf("%x", hash(o.code)), Expires: o.expires.UTC()})
	}
	b, err := json.Marshal(codes)
	if err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	tmp, err := writeTemp(d.dir, CodesFile, b)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(d.dir, CodesFile)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("pairing: %w", err)
	}
	return nil
}

// Wait returns who paired once a code is confirmed on the data folder (by bot
// pair, another process), or ctx's error when it ends first.
func (d *Desk) Wait(ctx context.Context) (Paired, error) {
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	for {
		p, ok, err := Load(d.dir)
		if err != nil || ok {
			return p, err
		}
		select {
		case <-ctx.Done():
			return Paired{}, ctx.Err()
		case <-tick.C:
		}
	}
}
