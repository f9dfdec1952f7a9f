package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The audit trail is a hash chain: each record carries the hash of the one
// before, hash = SHA-256(prev_hash || canonical form), prev_hash and hash in
// lowercase hex, the first record's prev_hash 64 zeros. This file is the
// record, its hash and the walk that checks a chain; the journal writes the
// records and checks its own tables against them (journal.VerifyAudit), and an
// export is checked with the same walk (Check).

// The kinds of audit records.
const (
	Genesis    = "genesis"    // the first record: a digest of the history before the trail
	Transition = "transition" // a move of an operation from one state to another
	Approval   = "approval"   // an approval asked, bound to the payload's hash
	Decision   = "decision"   // what became of an approval, and who decided
	Vote       = "vote"       // one approver's approval of an approval that needs several, or a grant's
	Escalation = "escalation" // an approval sent to the escalation list of approvers
	Edit       = "edit"       // a payload replaced by an approver before its approval
	Grant      = "grant"      // an approver's grant made
	Revoke     = "revoke"     // a grant ended before its time
)

// ZeroHash is the prev_hash of the first record of a trail.
var ZeroHash = strings.Repeat("0", 64)

// Record is one record of the audit trail, as stored and as exported (one
// JSON line each).
type Record struct {
	Seq       int64           `json:"seq"`
	At        int64           `json:"at"` // Unix milliseconds
	Kind      string          `json:"kind"`
	Operation string          `json:"operation,omitempty"`
	Ref       string          `json:"ref,omitempty"` // the transition's seq, the approval's id
	Body      json.RawMessage `json:"body"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// Sum returns the hash r must carry: the SHA-256, in hex, of its prev_hash (the
// 64 hex characters) followed by its canonical form, the JSON object
// {"seq","at","kind","operation","ref","body"} in that order with the body as a
// string of its exact bytes, as encoding/json writes it.
//
// Every fact a send journals is hashed here, so it is written without
// reflection, in one buffer: byte for byte what json.Marshal of those fields
// makes, which TestSumIsTheHashOfJSONMarshal and FuzzSum hold it to.
func (r Record) Sum() string {
	var arr [1024]byte
	buf := append(arr[:0], r.PrevHash...)
	sum := sha256.Sum256(appendCanonical(buf, r))
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

func appendCanonical(b []byte, r Record) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, r.At, 10)
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, r.Kind)
	b = append(b, `,"operation":`...)
	b = AppendJSONString(b, r.Operation)
	b = append(b, `,"ref":`...)
	b = AppendJSONString(b, r.Ref)
	b = append(b, `,"body":`...)
	b = AppendJSONString(b, r.Body)
	return append(b, '}')
}

// AppendJSONString appends s to b as encoding/json writes a string
// (HTML-escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped), without
// reflection: the canonical form's strings, and a store's rows of records
// written as JSON.
func AppendJSONString[T ~string | ~[]byte](b []byte, s T) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		switch {
		case c == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// RecordFault is the first thing wrong with an audit trail: the record it was
// found at (Seq 0 for a fact of the journal that has no record), or the
// pending record (Pending, its id in audit_pending, on PostgreSQL: not yet
// chained, but checked against the facts all the same), its kind and
// operation, and what is wrong.
type RecordFault struct {
	Seq       int64
	Pending   int64
	Kind      string
	Operation string
	Problem   string
}

func (f RecordFault) String() string {
	where := "record " + strconv.FormatInt(f.Seq, 10)
	switch {
	case f.Pending != 0:
		where = "pending record " + strconv.FormatInt(f.Pending, 10)
	case f.Seq == 0:
		where = "journal"
	}
	if f.Kind != "" {
		where += " (" + f.Kind
		if f.Operation != "" {
			where += " of " + f.Operation
		}
		where += ")"
	}
	return where + ": " + f.Problem
}

// Chain checks records one after another: each must follow the one before
// (its seq the next, its prev_hash that record's hash) and carry its own hash.
// VerifyAudit walks the journal's trail with one, and an export's check the
// lines of the file.
type Chain struct {
	n    int64
	next int64
	prev string
}

// NewChain returns a chain that expects the trail's first record (seq 1,
// prev_hash ZeroHash), or, with fromStart false, takes the first record it is
// given as where a part of the trail begins (an export from a seq on).
func NewChain(fromStart bool) *Chain {
	c := &Chain{next: -1}
	if fromStart {
		c.next, c.prev = 1, ZeroHash
	}
	return c
}

// Add checks r against the records before it and returns what is wrong with
// it, or nil.
func (c *Chain) Add(r Record) *RecordFault {
	fault := func(format string, args ...any) *RecordFault {
		return &RecordFault{Seq: r.Seq, Kind: r.Kind, Operation: r.Operation, Problem: fmt.Sprintf(format, args...)}
	}
	if c.next < 0 {
		c.next, c.prev = r.Seq, r.PrevHash
	}
	switch {
	case r.Seq != c.next:
		return fault("seq %d where %d was due: a record is missing or out of order", r.Seq, c.next)
	case r.PrevHash != c.prev:
		return fault("prev_hash is not the hash of the record before: a record before it was changed, removed or moved")
	case r.Hash != r.Sum():
		return fault("hash does not match the record's content: the record was changed")
	case !json.Valid(r.Body):
		return fault("body is not JSON")
	}
	c.n++
	c.next, c.prev = r.Seq+1, r.Hash
	return nil
}

// Records returns how many records were added intact, and Head the hash of the
// last of them.
func (c *Chain) Records() int64 { return c.n }

// Head returns the hash of the last record added intact.
func (c *Chain) Head() string { return c.prev }
