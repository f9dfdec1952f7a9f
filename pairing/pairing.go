// Package pairing lets the first person who writes to a bot that has no
// operators become its operator and approver, without looking up their
// Telegram user id first. The bot gives them a one-time code in Telegram, and
// whoever runs the bot's machine confirms it (countersign pair CODE) on the bot's data
// folder: the code proves the Telegram account, typing it on the machine proves
// the owner's consent. A data folder pairs once: after that, access is the
// policy's business.
//
// Two files in the data folder carry it, both 0600: pairing.json holds the
// pending codes' SHA-256 (never the codes), written by the running bot;
// paired.json names who paired, written once by Confirm and read by every
// command that loads the access lists.
package pairing

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/countersign/countersign/policy"
)

// The files in the data folder.
const (
	CodesFile  = "pairing.json"
	PairedFile = "paired.json"
)

// TTL is how long a code may be confirmed after the bot gave it.
const TTL = 10 * time.Minute

// Errors of Offer and Confirm; each is returned wrapped with what it concerns.
var (
	// ErrPaired: someone paired on the data folder already, and nobody else may.
	ErrPaired = errors.New("pairing: someone paired already")
	// ErrBusy: MaxPending people hold codes not yet confirmed nor expired.
	ErrBusy = errors.New("pairing: too many codes pending")
	// ErrNoPending: no code is pending on the data folder.
	ErrNoPending = errors.New("pairing: no code is pending")
	// ErrWrongCode: the code is none of those pending.
	ErrWrongCode = errors.New("pairing: not a pending code")
	// ErrExpired: the code was given, but more than TTL ago.
	ErrExpired = errors.New("pairing: the code expired")
)

// Paired is the person a data folder's bot paired with.
type Paired struct {
	User policy.UserID `json:"user"`
	Name string        `json:"name,omitempty"` // as Telegram showed them when they asked: for people, not for checks
	At   time.Time     `json:"paired_at"`
}

// Load returns who paired on the data folder dir; ok is false when nobody
// did (or dir does not exist). A file that cannot be read is an error that
// names it.
func Load(dir string) (p Paired, ok bool, err error) {
	path := filepath.Join(dir, PairedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Paired{}, false, nil
	}
	if err != nil {
		return Paired{}, false, fmt.Errorf("pairing: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil || p.User <= 0 {
		return Paired{}, false, fmt.Errorf("pairing: %s is not a pairing record (remove it to pair again): %v", path, orInvalid(err))
	}
	return p, true, nil
}

func orInvalid(err error) error {
	if err == nil {
		return errors.New("no user id")
	}
	return err
}

// pending is a code given and not yet confirmed, as pairing.json keeps it.
type pending struct {
	User    policy.UserID `json:"user"`
	Name    string        `json:"name,omitempty"`
	Hash    string        `json:"code_sha256"`
	Expires time.Time     `json:"expires"`
}

// Confirm makes the person whose pending code is code the one paired on dir,
// when the code has not expired at now. It returns ErrPaired when someone
// paired already, ErrNoPending, ErrWrongCode or ErrExpired otherwise, and
// changes nothing then. The code is read as people copy it: any case, with or
// without its dash and spaces.
func Confirm(dir, code string, now time.Time) (Paired, error) {
	if p, ok, err := Load(dir); err != nil || ok {
		return p, cmpErr(err, fmt.Errorf("%w: user %d, at %s", ErrPaired, p.User, p.At.UTC().Format(time.RFC3339)))
	}
	b, err := os.ReadFile(filepath.Join(dir, CodesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Paired{}, ErrNoPending
	}
	if err != nil {
		return Paired{}, fmt.Errorf("pairing: %w", err)
	}
	var codes []pending
	if err := json.Unmarshal(b, &codes); err != nil {
		return Paired{}, fmt.Errorf("pairing: %s: %w", filepath.Join(dir, CodesFile), err)
	}
	if len(codes) == 0 {
		return Paired{}, ErrNoPending
	}
	c, ok := match(codes, code)
	switch {
	case !ok:
		return Paired{}, ErrWrongCode
	case !now.Before(c.Expires):
		return Paired{}, fmt.Errorf("%w at %s", ErrExpired, c.Expires.UTC().Format("15:04:05 UTC"))
	}
	p := Paired{User: c.User, Name: c.Name, At: now.UTC()}
	if err := writeOnce(dir, p); err != nil {
		return Paired{}, err
	}
	// The codes are spent: the bot stops offering once it sees the pairing, and
	// a code left behind could confirm nothing (paired.json exists).
	if err := os.Remove(filepath.Join(dir, CodesFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, fmt.Errorf("pairing: paired, but the spent codes stay in %s: %w", filepath.Join(dir, CodesFile), err)
	}
	return p, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// match finds the pending code equal to code, comparing hashes in constant
// time.
func match(codes []pending, code string) (pending, bool) {
	want := hash(code)
	for _, c := range codes {
		got, err := hex.DecodeString(c.Hash)
		if err == nil && subtle.ConstantTimeCompare(got, want) == 1 {
			return c, true
		}
	}
	return pending{}, false
}

// writeOnce writes paired.json whole, or not at all when it exists: a
// temporary file linked to its name, which fails when the name is taken, so
// that two confirmations racing pair one person.
func writeOnce(dir string, p Paired) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("pairing: %w", err)
	}
	tmp, err := writeTemp(dir, PairedFile, b)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(dir, PairedFile)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: just now", ErrPaired)
		}
		return fmt.Errorf("pairing: %w", err)
	}
	return nil
}

// writeTemp writes b to a new 0600 file beside name in dir and returns its path.
func writeTemp(dir, name string, b []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("pairing: %w", err)
	}
	f, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return "", fmt.Errorf("pairing: %w", err)
	}
	if err := ownAsFolder(f, dir); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("pairing: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("pairing: %w", err)
	}
	return f.Name(), nil
}

// alphabet is what codes are made of: Crockford's base 32, without I, L, O
// and U, which normalize reads as 1, 1, 0 and V. 32 letters, so that a random
// byte's low five bits pick one evenly.
const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newCode is 8 random letters of alphabet (40 bits), shown as two groups of
// four.
func newCode() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pairing: %w", err)
	}
	var s strings.Builder
	for i, c := range b {
		if i == 4 {
			s.WriteByte('-')
		}
		s.WriteByte(alphabet[c&31])
	}
	return s.String(), nil
}

// hash is the SHA-256 of code as normalize reads it.
func hash(code string) []byte {
	h := sha256.Sum256([]byte(normalize(code)))
	return h[:]
}

// normalize reads a code as typed: upper case, without dashes or spaces, the
// letters misread for a digit as that digit.
func normalize(code string) string {
	return strings.Map(func(r rune) rune {
		switch r = unicode.ToUpper(r); r {
		case '-', ' ', '\t':
			return -1
		case 'I', 'L':
			return '1'
		case 'O':
			return '0'
		case 'U':
			return 'V'
		}
		return r
	}, code)
}
