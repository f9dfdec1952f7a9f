package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Source reads a trail's records in order from seq since on, handing each to
// fn until fn returns an error, which it returns.
type Source func(ctx context.Context, since int64, fn func(Record) error) error

// errStop ends the walk of the journal's records once the export's are matched.
var errStop = errors.New("audit: every exported record matched")

// Against compares an export kept elsewhere with the journal's trail: every
// record the export holds must be in the journal at its seq, byte for byte
// the same (body, prev_hash, hash), so that the journal's chain extends the
// export's. A journal rewritten whole, every hash recomputed so that it checks
// in place, is caught here: its records are no longer the ones exported.
// Check the export itself first (Check, with the key that signed it); Against
// reads only its records, and reports the first that differs or is missing.
// trail reads the journal's records (journal.Journal.AuditRecords).
func Against(ctx context.Context, export io.Reader, trail Source) (Report, error) {
	var rep Report
	var want []Record
	br := bufio.NewReader(export)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var probe map[string]json.RawMessage
			if jerr := json.Unmarshal(line, &probe); jerr != nil {
				rep.Fault = &Fault{Line: n, Reason: fmt.Sprintf("not a JSON object: %v", jerr)}
				return rep, nil
			}
			_, sig := probe["signature"]
			_, keys := probe["passkeys"]
			if !sig && !keys {
				var r Record
				if jerr := json.Unmarshal(line, &r); jerr != nil {
					rep.Fault = &Fault{Line: n, Reason: fmt.Sprintf("not an audit record: %v", jerr)}
					return rep, nil
				}
				want = append(want, r)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("audit: read the export: %w", err)
		}
	}
	if len(want) == 0 {
		rep.Fault = &Fault{Line: 1, Reason: "the export holds no record to compare"}
		return rep, nil
	}
	i := 0
	err := trail(ctx, want[0].Seq, func(got Record) error {
		w := want[i]
		if !sameRecord(got, w) {
			rep.Fault = &Fault{Line: i + 1, Reason: fmt.Sprintf("record %d differs in the journal (hash %.12s there, %.12s in the export): the journal was changed after the export", w.Seq, got.Hash, w.Hash)}
			return errStop
		}
		rep.Records, rep.Head = int64(i+1), got.Hash
		if i++; i == len(want) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return rep, fmt.Errorf("audit: read the journal's trail: %w", err)
	}
	if rep.Fault == nil && i < len(want) {
		rep.Fault = &Fault{Line: i + 1, Reason: fmt.Sprintf("record %d of the export is missing from the journal", want[i].Seq)}
	}
	return rep, nil
}

// sameRecord says whether two records are the same, every field.
func sameRecord(a, b Record) bool {
	return a.Seq == b.Seq && a.At == b.At && a.Kind == b.Kind && a.Operation == b.Operation && a.Ref == b.Ref &&
		compactEqual(a.Body, b.Body) && a.PrevHash == b.PrevHash && a.Hash == b.Hash
}

// SameJSON says whether two JSON texts are the same but for spacing.
func SameJSON(a, b []byte) bool { return compactEqual(a, b) }

// compactEqual says whether two JSON texts are the same but for spacing.
func compactEqual(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
