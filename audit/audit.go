// Package audit owns the audit trail's form: the record, its hash chain and
// the walk that checks it (record.go), which the journal writes and verifies
// its tables against; and exports of the trail: JSON Lines, one record a line
// as the journal stores it, and a last line that signs everything before it
// with an Ed25519 key, so that a copy kept elsewhere proves what the trail said
// when it was exported, and can be checked offline with the public key alone.
// It imports nothing of the project's: the journal imports it.
package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
)

// KeyEnv is the environment variable that holds the private key exports are
// signed with: base64 of a 32-byte Ed25519 seed or of a 64-byte private key.
const KeyEnv = "COUNTERSIGN_AUDIT_KEY"

// Errors of keys. Their messages never quote the key.
var (
	ErrNoKey  = errors.New("no signing key: set " + KeyEnv + " to base64 of a 32-byte Ed25519 seed (countersign audit keygen makes one)")
	ErrBadKey = errors.New("malformed key")
)

// ParseKey reads a private key: base64 (standard or URL alphabet, padded or
// not) of a 32-byte seed or a 64-byte private key whose public half matches its
// seed. Spaces and newlines around it are ignored. The error never quotes s.
func ParseKey(s string) (ed25519.PrivateKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, ErrNoKey
	}
	b, err := decode64(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w: not base64", KeyEnv, ErrBadKey)
	case len(b) == ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(b), nil
	case len(b) == ed25519.PrivateKeySize:
		k := ed25519.PrivateKey(b)
		if !bytes.Equal(ed25519.NewKeyFromSeed(k.Seed()).Public().(ed25519.PublicKey), k.Public().(ed25519.PublicKey)) {
			return nil, fmt.Errorf("%s: %w: its public half does not match its seed", KeyEnv, ErrBadKey)
		}
		return k, nil
	}
	return nil, fmt.Errorf("%s: %w: %d bytes, want 32 (a seed) or 64 (a private key)", KeyEnv, ErrBadKey, len(b))
}

// ParsePublicKey reads a public key: base64 of 32 bytes, or the name of a file
// that holds it.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if data, err := os.ReadFile(s); err == nil {
		s = strings.TrimSpace(string(data))
	}
	b, err := decode64(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: a public key is base64 of 32 bytes (or a file holding it)", ErrBadKey)
	}
	return ed25519.PublicKey(b), nil
}

func decode64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, ErrBadKey
}

// NewKey returns a new private key as its base64 seed, and its public key in
// base64.
func NewKey() (private, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(priv.Seed()), base64.StdEncoding.EncodeToString(pub), nil
}

// Signature is an export's last line.
type Signature struct {
	// Signature is base64 of the Ed25519 signature of the SHA-256 of every byte
	// before this line.
	Signature string `json:"signature"`
	Key       string `json:"key"`     // base64 of the public key
	Head      string `json:"head"`    // the hash of the last record
	Records   int64  `json:"records"` // how many records the export holds
}

// Writer writes an export: Add each record in order, then Close.
type Writer struct {
	w    *bufio.Writer
	sum  hash.Hash
	key  ed25519.PrivateKey
	n    int64
	head string
}

// NewWriter returns a Writer to w that signs with key.
func NewWriter(w io.Writer, key ed25519.PrivateKey) *Writer {
	return &Writer{w: bufio.NewWriter(w), sum: sha256.New(), key: key}
}

// Add writes r as one line.
func (e *Writer) Add(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: export record %d: %w", r.Seq, err)
	}
	line = append(line, '\n')
	e.sum.Write(line)
	e.n++
	e.head = r.Hash
	_, err = e.w.Write(line)
	return err
}

// Keys writes the passkeys line: the public keys of the approvers whose
// receipts the export holds, after the last record and before Close, so that
// the signature covers them. An export without receipts needs none.
func (e *Writer) Keys(keys []PasskeyKey) error {
	if keys == nil {
		keys = []PasskeyKey{}
	}
	line, err := json.Marshal(Passkeys{Passkeys: keys})
	if err != nil {
		return fmt.Errorf("audit: export the passkeys: %w", err)
	}
	_, err = io.MultiWriter(e.sum, e.w).Write(append(line, '\n')) // signed like a record
	return err
}

// Close writes the signature line over everything before it and flushes. It
// returns the signature line as written.
func (e *Writer) Close() (Signature, error) {
	s := Signature{
		Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(e.key, e.sum.Sum(nil))),
		Key:       base64.StdEncoding.EncodeToString(e.key.Public().(ed25519.PublicKey)),
		Head:      e.head,
		Records:   e.n,
	}
	line, _ := json.Marshal(s) // strings and a number always marshal
	e.w.Write(append(line, '\n'))
	return s, e.w.Flush()
}

// Report is what Check found in an export.
type Report struct {
	Records int64
	Head    string
	// Receipts is how many passkey receipts were verified, with Keys the
	// public keys the export carried.
	Receipts int
	Keys     []PasskeyKey
	// Fault is the first thing wrong, the record it was found at when there is
	// one (Seq), or the line (Line); nil when the export is intact and signed by
	// the key.
	Fault *Fault
}

// Fault is what is wrong with an export.
type Fault struct {
	Line   int          // 1-based
	Record *RecordFault // the bad record, when the fault is one
	Reason string
}

func (f Fault) String() string {
	if f.Record != nil {
		return fmt.Sprintf("line %d: %s", f.Line, f.Record)
	}
	return fmt.Sprintf("line %d: %s", f.Line, f.Reason)
}

// Check reads an export from r and checks, in this order: each record follows
// the one before in the chain and carries its own hash (the first bad one is
// named), the last line is a signature by pub over every byte before it, and
// its count and head are the records'; then every passkey receipt, offline,
// with the public keys of the export's passkeys line alone (VerifyReceipt),
// the payload hash it claims against its approval's record when the export
// holds it, and every vote that says a passkey was given has its receipt.
// The error is for r failing to read.
func Check(r io.Reader, pub ed25519.PublicKey) (Report, error) {
	var rep Report
	br := bufio.NewReader(r)
	sum := sha256.New()
	chain := NewChain(false)
	receipts := newReceiptCheck()
	fail := func(line int, format string, args ...any) (Report, error) {
		rep.Fault = &Fault{Line: line, Reason: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, fmt.Errorf("audit: read the export: %w", err)
		}
		if len(line) == 0 {
			return fail(n, "no signature line: the export was cut short or never signed")
		}
		if line[len(line)-1] != '\n' {
			return fail(n, "the export ends inside this line: it was cut short")
		}
		var probe map[string]json.RawMessage
		if jerr := json.Unmarshal(line, &probe); jerr != nil {
			return fail(n, "not a JSON object: %v", jerr)
		}
		if _, ok := probe["signature"]; ok {
			rep, err := checkSignature(rep, n, line, br, sum.Sum(nil), pub)
			if err == nil && rep.Fault == nil {
				rep.Fault = receipts.verify()
				rep.Receipts = receipts.verified
				rep.Keys = receipts.sortedKeys()
			}
			return rep, err
		}
		if _, ok := probe["passkeys"]; ok {
			if problem := receipts.setKeys(n, line); problem != "" {
				return fail(n, "%s", problem)
			}
			sum.Write(line)
			continue
		}
		if receipts.keysLine != 0 {
			return fail(n, "a record after the passkeys line, which must come last before the signature")
		}
		var rec Record
		if jerr := json.Unmarshal(line, &rec); jerr != nil {
			return fail(n, "not an audit record: %v", jerr)
		}
		if f := chain.Add(rec); f != nil {
			rep.Fault = &Fault{Line: n, Record: f}
			return rep, nil
		}
		receipts.add(n, rec)
		sum.Write(line)
		rep.Records, rep.Head = chain.Records(), chain.Head()
	}
}

// checkSignature checks the signature line (line n) against the digest of the
// lines before it, and that nothing follows it.
func checkSignature(rep Report, n int, line []byte, rest *bufio.Reader, digest []byte, pub ed25519.PublicKey) (Report, error) {
	fail := func(format string, args ...any) (Report, error) {
		rep.Fault = &Fault{Line: n, Reason: fmt.Sprintf(format, args...)}
		return rep, nil
	}
	var s Signature
	if err := json.Unmarshal(line, &s); err != nil {
		return fail("a malformed signature line: %v", err)
	}
	key, kerr := base64.StdEncoding.DecodeString(s.Key)
	sig, serr := base64.StdEncoding.DecodeString(s.Signature)
	switch {
	case kerr != nil || serr != nil:
		return fail("a malformed signature line: its key or signature is not base64")
	case !bytes.Equal(key, pub):
		return fail("signed by another key (%s), not the one given", s.Key)
	case !ed25519.Verify(pub, digest, sig):
		return fail("the signature does not match the lines before it: one was changed, removed, added or moved")
	case s.Records != rep.Records || s.Head != rep.Head:
		return fail("the signature line says %d records, head %.12s; the export holds %d, head %.12s", s.Records, s.Head, rep.Records, rep.Head)
	}
	if extra, _ := rest.ReadBytes('\n'); len(extra) > 0 {
		rep.Fault = &Fault{Line: n + 1, Reason: "a line after the signature, which it does not cover"}
	}
	return rep, nil
}
