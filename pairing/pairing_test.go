package pairing_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
)

// clock is a time a test moves by hand.
type clock struct{ at atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *clock) advance(d time.Duration) { c.at.Add(int64(d)) }

func open(t *testing.T, dir string, c *clock) *pairing.Desk {
	t.Helper()
	d, err := pairing.Open(dir, pairing.Options{Clock: c.now, Every: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func offer(t *testing.T, d *pairing.Desk, user int64) pairing.Offer {
	t.Helper()
	o, err := d.Offer(policy.UserID(user), "someone")
	if err != nil {
		t.Fatalf("Offer(%d): %v", user, err)
	}
	return o
}

var codeShape = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$`)

// A code is confirmed once, by whoever has it, within its time; every other
// attempt says why and pairs nobody.
func TestConfirm(t *testing.T) {
	tests := []struct {
		name    string
		code    func(pairing.Offer) string
		after   time.Duration
		wantErr error
	}{
		{"as given", func(o pairing.Offer) string { return o.Code }, 0, nil},
		{"as typed: lower case, no dash, O for 0 and L for 1", func(o pairing.Offer) string {
			c := strings.ToLower(strings.ReplaceAll(o.Code, "-", ""))
			return strings.NewReplacer("0", "o", "1", "l").Replace(c)
		}, 0, nil},
		{"a minute before it expires", func(o pairing.Offer) string { return o.Code }, pairing.TTL - time.Minute, nil},
		{"wrong", func(o pairing.Offer) string { return flip(o.Code) }, 0, pairing.ErrWrongCode},
		{"empty", func(pairing.Offer) string { return "" }, 0, pairing.ErrWrongCode},
		{"expired", func(o pairing.Offer) string { return o.Code }, pairing.TTL, pairing.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, c := t.TempDir(), newClock()
			d := open(t, dir, c)
			o := offer(t, d, 111)
			if !o.Fresh || !codeShape.MatchString(o.Code) || !o.Expires.Equal(c.now().Add(pairing.TTL)) {
				t.Fatalf("Offer = %+v, want a fresh code of the shape XXXX-XXXX expiring in %s", o, pairing.TTL)
			}
			c.advance(tt.after)
			p, err := pairing.Confirm(dir, tt.code(o), c.now())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Confirm: %v, want %v", err, tt.wantErr)
			}
			got, ok, lerr := pairing.Load(dir)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tt.wantErr != nil {
				if ok {
					t.Errorf("Load after a refused code = %+v, want nobody paired", got)
				}
				return
			}
			if p.User != 111 || !ok || got.User != 111 || got.Name != "someone" {
				t.Errorf("Confirm = %+v, Load = %+v %v, want user 111 paired", p, got, ok)
			}
		})
	}
}

// flip changes the code's first letter.
func flip(code string) string {
	if code[0] == '2' {
		return "3" + code[1:]
	}
	return "2" + code[1:]
}

// Once someone paired, nobody else may: not with their own pending code, not
// with the spent one, and the desk gives no more codes.
func TestOnePairingPerDataFolder(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	d := open(t, dir, c)
	first, second := offer(t, d, 111), offer(t, d, 222)
	if first.Code == second.Code {
		t.Fatalf("two people got the same code %s", first.Code)
	}
	if _, err := pairing.Confirm(dir, first.Code, c.now()); err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]string{"the other's code": second.Code, "the spent code": first.Code} {
		if _, err := pairing.Confirm(dir, code, c.now()); !errors.Is(err, pairing.ErrPaired) {
			t.Errorf("%s: Confirm = %v, want ErrPaired", name, err)
		}
	}
	if _, err := d.Offer(333, "late"); !errors.Is(err, pairing.ErrPaired) {
		t.Errorf("Offer after pairing = %v, want ErrPaired", err)
	}
	if p, _, _ := pairing.Load(dir); p.User != 111 {
		t.Errorf("paired = %d, want 111", p.User)
	}
	if _, err := os.Stat(filepath.Join(dir, pairing.CodesFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the spent codes are still in %s: %v", pairing.CodesFile, err)
	}
}

// Two confirmations racing pair exactly one person.
func TestConfirmationsRacingPairOne(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	d := open(t, dir, c)
	codes := []string{offer(t, d, 111).Code, offer(t, d, 222).Code, offer(t, d, 333).Code}
	var wg sync.WaitGroup
	var won atomic.Int32
	for _, code := range codes {
		wg.Go(func() {
			if _, err := pairing.Confirm(dir, code, c.now()); err == nil {
				won.Add(1)
			} else if !errors.Is(err, pairing.ErrPaired) && !errors.Is(err, pairing.ErrNoPending) {
				t.Errorf("Confirm: %v, want ErrPaired or ErrNoPending for a loser", err)
			}
		})
	}
	wg.Wait()
	if n := won.Load(); n != 1 {
		t.Errorf("%d confirmations won, want 1", n)
	}
}

// A person who asks again holds the same code; a few people may hold codes at
// once, and a new one gets room when a code expires.
func TestOffer(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	d := open(t, dir, c)
	first := offer(t, d, 111)
	if again := offer(t, d, 111); again.Fresh || again.Code != first.Code || !again.Expires.Equal(first.Expires) {
		t.Errorf("asked again: %+v, want the same code, not fresh, as %+v", again, first)
	}
	for u := int64(2); u <= pairing.MaxPending; u++ {
		offer(t, d, u)
	}
	if _, err := d.Offer(999, "one too many"); !errors.Is(err, pairing.ErrBusy) {
		t.Errorf("Offer beyond %d pending = %v, want ErrBusy", pairing.MaxPending, err)
	}
	c.advance(pairing.TTL)
	if o := offer(t, d, 999); !o.Fresh {
		t.Errorf("Offer once the others expired = %+v, want a fresh code", o)
	}
	if o := offer(t, d, 111); !o.Fresh || o.Code == first.Code {
		t.Errorf("Offer after the first code expired = %+v, want a new code", o)
	}
}

// The codes file is the bot's only: 0600, and the codes are not in it; a new
// desk (a restart) drops the codes a previous one gave.
func TestCodesFile(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	o := offer(t, open(t, dir, c), 111)
	path := filepath.Join(dir, pairing.CodesFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s mode %04o, want 0600", pairing.CodesFile, perm)
	}
	b, _ := os.ReadFile(path)
	for _, s := range []string{o.Code, strings.ReplaceAll(o.Code, "-", "")} {
		if strings.Contains(string(b), s) {
			t.Errorf("%s holds the code %s:\n%s", pairing.CodesFile, s, b)
		}
	}
	open(t, dir, c)
	if _, err := pairing.Confirm(dir, o.Code, c.now()); !errors.Is(err, pairing.ErrNoPending) {
		t.Errorf("Confirm after a restart = %v, want ErrNoPending", err)
	}
}

// Wait returns once another process confirmed a code, and not before.
func TestWaitNoticesAConfirmation(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	d := open(t, dir, c)
	o := offer(t, d, 111)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if p, err := d.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with nothing confirmed = %+v, %v, want the deadline", p, err)
	}
	done := make(chan pairing.Paired, 1)
	go func() {
		p, err := d.Wait(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- p
	}()
	if _, err := pairing.Confirm(dir, o.Code, c.now()); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-done:
		if p.User != 111 {
			t.Errorf("Wait = %+v, want user 111", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not notice the confirmation")
	}
}

// A pairing record nobody could have written is an error that names it, not
// an empty pairing.
func TestLoadRefusesAMalformedRecord(t *testing.T) {
	for name, body := range map[string]string{"not JSON": "{", "no user": `{"name":"x"}`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, pairing.PairedFile), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := pairing.Load(dir); err == nil || ok || !strings.Contains(err.Error(), pairing.PairedFile) {
				t.Errorf("Load = %v, %v, want an error naming %s", ok, err, pairing.PairedFile)
			}
		})
	}
}
