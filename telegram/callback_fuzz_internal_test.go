package telegram

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
)

// FuzzParseCallback: no callback data makes parseCallback panic; what it accepts
// is exactly three fields with an id, and writes back to the same bytes, so that one
// tap can never be read as two different decisions; and the data of every button the
// bot makes reads back as the button it is.
func FuzzParseCallback(f *testing.F) {
	for _, seed := range []string{
		"ap1:ap-7k2m9q:y", "ap1:ap-7k2m9q:n", "rs1:op-7k2m9q:d", "rs1:op-7k2m9q:n",
		"ap1::y", "ap1:x:y:z", ":x:", "::", "", "ap2:ap-1:y", "ap1:ap-1:maybe",
		`{"text":"send money"}`, "ap1:ap-1:y\x00", "ap1:" + strings.Repeat("x", 70) + ":y",
		// Callback data of the recorded updates (telegram/standin/testdata and
		// ../shared/fixtures/telegram).
		"order:Espresso", "query-data",
	} {
		f.Add(seed, "ap1", "ap-7k2m9q", "y")
	}
	f.Fuzz(func(t *testing.T, data, kind, id, answer string) {
		k, i, a, ok := parseCallback(data)
		if ok {
			if i == "" || strings.Contains(k+i+a, ":") {
				t.Fatalf("parseCallback(%q) = %q %q %q: not three fields with an id", data, k, i, a)
			}
			if back := callbackData(k, i, a); back != data {
				t.Fatalf("parseCallback(%q) writes back as %q", data, back)
			}
		} else if k != "" || i != "" || a != "" {
			t.Fatalf("parseCallback(%q) refused it but returned %q %q %q", data, k, i, a)
		}
		if strings.Count(data, ":") == 2 && !strings.HasPrefix(data[strings.IndexByte(data, ':'):], "::") && !ok {
			t.Fatalf("parseCallback(%q) refused three fields with an id", data)
		}
		// A button made from fields without a colon reads back as itself.
		if id != "" && !strings.Contains(kind+id+answer, ":") {
			k, i, a, ok := parseCallback(callbackData(kind, id, answer))
			if !ok || k != kind || i != id || a != answer {
				t.Fatalf("callbackData(%q, %q, %q) reads back as %q %q %q %v", kind, id, answer, k, i, a, ok)
			}
		}
	})
}

// The bot's own buttons fit in the 64 bytes Telegram allows callback data.
func TestCallbackDataFitsTelegramsLimit(t *testing.T) {
	t.Parallel()
	for _, d := range []string{
		callbackData(approveKind, journal.NewID("ap"), "y"),
		callbackData(resolveKind, journal.NewID("op"), "n"),
	} {
		if len(d) > 64 {
			t.Errorf("callback data %q is %d bytes, over 64", d, len(d))
		}
	}
}
