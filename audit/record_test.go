package audit_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/audit"
)

// sumByMarshal is a record's hash as the trail has always defined it: SHA-256
// of prev_hash and json.Marshal of the canonical fields. Sum must match it
// byte for byte, or every trail written before would stop verifying.
func sumByMarshal(t testing.TB, r audit.Record) string {
	canon, err := json.Marshal(struct {
		Seq       int64  `json:"seq"`
		At        int64  `json:"at"`
		Kind      string `json:"kind"`
		Operation string `json:"operation"`
		Ref       string `json:"ref"`
		Body      string `json:"body"`
	}{r.Seq, r.At, r.Kind, r.Operation, r.Ref, string(r.Body)})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write([]byte(r.PrevHash))
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil))
}

func TestSumIsTheHashOfJSONMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    audit.Record
	}{
		{"zero", audit.Record{}},
		{"genesis", audit.Record{Seq: 1, At: 1700000000000, Kind: audit.Genesis, PrevHash: audit.ZeroHash, Body: json.RawMessage(`{"transitions_through":0,"approvals":0,"history_sha256":"e3b0"}`)}},
		{"transition", audit.Record{Seq: 42, At: 1765000000123, Kind: audit.Transition, Operation: "op-abc234", Ref: "17",
			PrevHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Body:     json.RawMessage(`{"transition":17,"from":"approved","to":"committing","reason":"attempt 1","at":1765000000123}`)}},
		{"negative numbers", audit.Record{Seq: -1, At: -1700000000000, Kind: "k"}},
		{"html and quotes", audit.Record{Kind: "a<b>&c", Operation: `"quoted"\back\slash`, Body: json.RawMessage(`{"text":"<b>fish & chips</b>"}`)}},
		{"control bytes", audit.Record{Ref: "\x00\x01\b\f\n\r\t\x1f\x7f", Body: json.RawMessage("line\u2028para\u2029end")}},
		{"invalid utf-8", audit.Record{Operation: "a\xffb\xc3", Body: json.RawMessage("\xed\xa0\x80 surrogate, \xf0\x9f\x98 cut")}},
		{"multibyte", audit.Record{Kind: "décision", Body: json.RawMessage(`{"text":"привет 👋 世界"}`)}},
		{"long body", audit.Record{Body: json.RawMessage(`"` + string(make([]byte, 3000)) + `"`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.r.Sum(), sumByMarshal(t, tt.r); got != want {
				t.Errorf("Sum() = %s, want %s", got, want)
			}
		})
	}
}

func FuzzSum(f *testing.F) {
	f.Add(int64(1), int64(2), "transition", "op-x", "3", []byte(`{"a":"<&>"}`), audit.ZeroHash)
	f.Add(int64(0), int64(-5), "\u2028", "\xff", "\x00", []byte("\xe2\x80"), "")
	f.Fuzz(func(t *testing.T, seq, at int64, kind, op, ref string, body []byte, prev string) {
		r := audit.Record{Seq: seq, At: at, Kind: kind, Operation: op, Ref: ref, Body: body, PrevHash: prev}
		if got, want := r.Sum(), sumByMarshal(t, r); got != want {
			t.Errorf("Sum() = %s, want %s", got, want)
		}
	})
}
