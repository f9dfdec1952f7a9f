package audit_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// trail returns a journal with a little history: two operations asked for
// approval, one approved and one rejected.
func trail(t *testing.T) *journal.Journal {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []journal.Decision{journal.DecideApprove, journal.DecideReject} {
		task, err := j.CreateTask(ctx, journal.Task{Requester: 7, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
			Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi <b>" + string(rune('a'+i))}}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		a := j.NewApproval(op, 7, time.Hour)
		for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
			if err := j.Move(ctx, op.ID, m); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := j.Decide(ctx, a.ID, d, 42); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

func export(t *testing.T, j *journal.Journal, key ed25519.PrivateKey, since int64) []byte {
	t.Helper()
	var b bytes.Buffer
	w := audit.NewWriter(&b, key)
	if err := j.AuditRecords(context.Background(), since, w.Add); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func seed(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

// lines splits an export into its lines, each with its newline.
func lines(b []byte) []string {
	ls := strings.SplitAfter(string(b), "\n")
	return ls[:len(ls)-1]
}

func TestAnExportIsCheckedOffline(t *testing.T) {
	j := trail(t)
	key := seed(1)
	pub := key.Public().(ed25519.PublicKey)
	good := export(t, j, key, 0)
	ls := lines(good)
	n := len(ls) - 1 // records; the last line is the signature
	swap := append([]string{}, ls...)
	swap[2], swap[3] = swap[3], swap[2]
	tests := []struct {
		name string
		file string
		pub  ed25519.PublicKey
		want string // "" for intact
	}{
		{"intact", string(good), pub, ""},
		{"a part, from seq 4", string(export(t, j, key, 4)), pub, ""},
		{"a line edited", strings.Replace(string(good), `"by":42`, `"by":44`, 1), pub, "hash does not match"},
		{"a line edited, its hash recomputed", rehash(t, ls, 3), pub, "line 5: record 5"},
		{"a line removed", strings.Join(append(append([]string{}, ls[:3]...), ls[4:]...), ""), pub, "line 4: record 5"},
		{"the first line removed", strings.Join(ls[1:], ""), pub, "the signature does not match"},
		{"two lines swapped", strings.Join(swap, ""), pub, "line 3: record 4"},
		{"cut short inside a line", string(good[:len(good)-len(ls[n])-10]), pub, "cut short"},
		{"cut short at a line's end", strings.Join(ls[:n], ""), pub, "no signature line"},
		{"signed by another key", string(export(t, j, seed(2), 0)), pub, "signed by another key"},
		{"the key field swapped for ours", strings.Replace(string(export(t, j, seed(2), 0)),
			base64.StdEncoding.EncodeToString(seed(2).Public().(ed25519.PublicKey)), base64.StdEncoding.EncodeToString(pub), 1), pub, "the signature does not match"},
		{"the signature line's count changed", sigLine(ls, func(s *audit.Signature) { s.Records++ }), pub, "the signature line says"},
		{"the signature line's head changed", sigLine(ls, func(s *audit.Signature) { s.Head = strings.Repeat("0", 64) }), pub, "the signature line says"},
		{"a line after the signature", string(good) + ls[1], pub, "after the signature"},
		{"the last record edited, its hash and the head recomputed", forgeLast(t, ls), pub, "the signature does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := audit.Check(strings.NewReader(tt.file), tt.pub)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && rep.Fault != nil:
				t.Errorf("fault %s, want intact", rep.Fault)
			case tt.want != "" && (rep.Fault == nil || !strings.Contains(rep.Fault.String(), tt.want)):
				t.Errorf("fault %v, want one with %q", rep.Fault, tt.want)
			}
		})
	}
	if rep, _ := audit.Check(bytes.NewReader(good), pub); rep.Records != int64(n) || rep.Head == "" {
		t.Errorf("report %+v, want %d records and the head", rep, n)
	}
}

// rehash changes the record on line i (0-based) and recomputes its hash, as a
// forger who knows the format would: the next record's prev_hash gives it away.
func rehash(t *testing.T, ls []string, i int) string {
	t.Helper()
	var r audit.Record
	if err := json.Unmarshal([]byte(ls[i]), &r); err != nil {
		t.Fatal(err)
	}
	r.At++
	r.Hash = r.Sum()
	out := append([]string{}, ls...)
	b, _ := json.Marshal(r)
	out[i] = string(b) + "\n"
	return strings.Join(out, "")
}

func TestKeysAreParsedWithoutShowingThem(t *testing.T) {
	k := seed(3)
	seed64 := base64.StdEncoding.EncodeToString(k.Seed())
	full := base64.StdEncoding.EncodeToString(k)
	bad := append(ed25519.PrivateKey{}, k...)
	bad[40] ^= 1
	tests := []struct {
		name, in string
		want     error
	}{
		{"seed", seed64, nil},
		{"seed with a newline", seed64 + "\n", nil},
		{"private key", full, nil},
		{"missing", "", audit.ErrNoKey},
		{"not base64", "not a key at all!", audit.ErrBadKey},
		{"wrong length", base64.StdEncoding.EncodeToString(k.Seed()[:31]), audit.ErrBadKey},
		{"halves that disagree", base64.StdEncoding.EncodeToString(bad), audit.ErrBadKey},
	}
	for _, tt := range tests {
		got, err := audit.ParseKey(tt.in)
		switch {
		case !errors.Is(err, tt.want) && !(err == nil && tt.want == nil):
			t.Errorf("%s: ParseKey = %v, want %v", tt.name, err, tt.want)
		case err == nil && !got.Equal(k):
			t.Errorf("%s: another key", tt.name)
		case err != nil && tt.in != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.in)):
			t.Errorf("%s: the error quotes the key: %v", tt.name, err)
		}
	}
}

// forgeLast changes the last record, which no record after it vouches for,
// recomputes its hash and puts that in the signature line's head: only the
// signature can tell.
func forgeLast(t *testing.T, ls []string) string {
	t.Helper()
	n := len(ls) - 1
	var r audit.Record
	if err := json.Unmarshal([]byte(ls[n-1]), &r); err != nil {
		t.Fatal(err)
	}
	old := r.Hash
	r.At++
	r.Hash = r.Sum()
	b, _ := json.Marshal(r)
	out := append([]string{}, ls...)
	out[n-1] = string(b) + "\n"
	out[n] = strings.Replace(out[n], old, r.Hash, 1)
	return strings.Join(out, "")
}

// sigLine changes the export's signature line with change and leaves the
// records and the signature over them as they are: the signature does not
// cover its own line, so only the count and head checks can tell.
func sigLine(ls []string, change func(*audit.Signature)) string {
	n := len(ls) - 1
	var s audit.Signature
	if err := json.Unmarshal([]byte(ls[n]), &s); err != nil {
		panic(err)
	}
	change(&s)
	b, _ := json.Marshal(s)
	out := append([]string{}, ls...)
	out[n] = string(b) + "\n"
	return strings.Join(out, "")
}
