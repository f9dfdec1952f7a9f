package verifier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// sent is one earlier payload in the fake history, with its target.
type sent struct {
	target string
	verifier.Sent
}

// history is a slice-backed History that keeps each entry's SeenKey, as the
// journal does, and returns only the entries of the key asked: every
// duplicate the tests below find is found by its key. A history whose first
// entry has the target "broken" fails every read.
type history []sent

func (h history) Recent(ctx context.Context, target string, since time.Time, key string) ([]verifier.Sent, error) {
	if len(h) > 0 && h[0].target == "broken" {
		return nil, errors.New("database is locked")
	}
	var out []verifier.Sent
	for _, s := range h {
		if s.target == target && !s.At.Before(since) && verifier.SeenKey(s.Text, s.ParseMode, s.Files) == key {
			out = append(out, s.Sent)
		}
	}
	return out, nil
}

// Rejected implements verifier.History: this history holds no rejection (see
// rejections).
func (h history) Rejected(ctx context.Context, task, chat string, since time.Time) ([]verifier.Sent, error) {
	if len(h) > 0 && h[0].target == "broken" {
		return nil, errors.New("database is locked")
	}
	return nil, nil
}

var _ verifier.History = history{}

func TestDuplicates(t *testing.T) {
	h := history{
		{"@news_desk", verifier.Sent{OperationID: "op-old", Text: "Hello, readers.", State: "committed", At: noon.Add(-25 * time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-a1", Text: "  hello,\n READERS. ", State: "committed", At: noon.Add(-3 * time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-b2", Text: "Hello, readers.", State: "awaiting_approval", At: noon.Add(-time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-c3", Text: "Morning edition", State: "unknown", At: noon.Add(-2 * time.Hour)}},
		{"@other_desk", verifier.Sent{OperationID: "op-d4", Text: "Evening edition", State: "committed", At: noon.Add(-time.Hour)}},
	}
	c := verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock)
	runCases(t, c, []verdictCase{
		{"latest of two matches", ok(), verifier.Stop, []string{"duplicates: same text as operation op-b2 (awaiting_approval 2026-03-02 11:00 UTC)"}},
		{"unknown outcome counts", text("MORNING   edition"), verifier.Stop, []string{"duplicates: same text as operation op-c3 (unknown 2026-03-02 10:00 UTC)"}},
		{"other target", text("Evening edition"), verifier.Pass, nil},
		{"new text", text("Hello, readers!"), verifier.Pass, nil},
	})
	runCases(t, verifier.New(policy.Verify{DuplicateWindow: 90 * time.Minute}, h, clock), []verdictCase{
		{"inside a short window", ok(), verifier.Stop, []string{"duplicates: same text as operation op-b2 (awaiting_approval 2026-03-02 11:00 UTC)"}},
		{"outside a short window", text("Morning edition"), verifier.Pass, nil},
	})
	broken := history{{target: "broken"}}
	runCases(t, verifier.New(policy.Verify{DuplicateWindow: time.Hour}, broken, clock), []verdictCase{
		{"history unavailable", ok(), verifier.Stop, []string{"duplicates: history unavailable: database is locked"}},
	})
	runCases(t, verifier.New(policy.Verify{}, broken, clock), []verdictCase{
		{"window 0 is off", ok(), verifier.Pass, nil},
	})
}

// TestDuplicatesAsTheRecipientSeesThem: a text sent again with characters that show
// nothing, markup that shows nothing, entities or another Unicode form is the same
// text to its recipient, and a duplicate; a text that reads differently is not.
func TestDuplicatesAsTheRecipientSeesThem(t *testing.T) {
	h := history{
		{"@news_desk", verifier.Sent{OperationID: "op-plain", Text: "Tom & Jerry are back", State: "committed", At: noon.Add(-time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-html", Text: "<b>Café</b> opens at <i>noon</i>", ParseMode: "HTML", State: "committed", At: noon.Add(-2 * time.Hour)}},
		{"@news_desk", verifier.Sent{OperationID: "op-md", Text: `Sale ends *today*\!`, ParseMode: "MarkdownV2", State: "unknown", At: noon.Add(-3 * time.Hour)}},
	}
	c := verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock)
	dup := func(op, state string, hours int) []string {
		at := noon.Add(-time.Duration(hours) * time.Hour).UTC().Format("2006-01-02 15:04 UTC")
		return []string{"duplicates: same text as operation " + op + " (" + state + " " + at + ")"}
	}
	plain := dup("op-plain", "committed", 1)
	cafe := dup("op-html", "committed", 2)
	sale := dup("op-md", "unknown", 3)
	inMode := func(s, mode string) verifier.Input {
		return with(func(in *verifier.Input) { in.Text, in.ParseMode = s, mode })
	}
	runCases(t, c, []verdictCase{
		{"zero-width space", text("Tom &\u200b Jerry are back"), verifier.Stop, plain},
		{"zero-width non-joiner and joiner", text("To\u200cm & Je\u200drry are back"), verifier.Stop, plain},
		{"word joiner", text("Tom & Jer\u2060ry are back"), verifier.Stop, plain},
		{"byte order mark", text("\ufeffTom & Jerry are back"), verifier.Stop, plain},
		{"soft hyphen", text("Tom & Jer\u00adry are back"), verifier.Stop, plain},
		{"LRM and RLM", text("Tom\u200e & Jerry\u200f are back"), verifier.Stop, plain},
		{"bidi override and isolate", text("\u202aTom & Jerry\u202c \u2066are back\u2069"), verifier.Stop, plain},
		{"HTML entity", inMode("Tom &amp; Jerry are back", "HTML"), verifier.Stop, plain},
		{"HTML numeric zero-width entity", inMode("Tom &amp; Jer&#8203;ry are back", "HTML"), verifier.Stop, plain},
		{"HTML empty tags", inMode("Tom <b></b>&amp; Jerry <i></i>are back", "HTML"), verifier.Stop, plain},
		{"MarkdownV2 escapes", inMode(`Tom & Jerry are \b\a\c\k`, "MarkdownV2"), verifier.Stop, plain},
		{"other markup, same words", inMode("Café opens at noon", ""), verifier.Stop, cafe},
		{"decomposed é", inMode("Cafe\u0301 opens at noon", ""), verifier.Stop, cafe},
		{"decomposed é as an entity", inMode("<u>Cafe&#769;</u> opens at noon", "HTML"), verifier.Stop, cafe},
		{"MarkdownV2 to plain", text("Sale ends today!"), verifier.Stop, sale},
		{"MarkdownV2 to HTML with a soft hyphen", inMode("Sale ends <b>to&#173;day</b>!", "HTML"), verifier.Stop, sale},
		{"entity shown as written in plain text", text("Tom &amp; Jerry are back"), verifier.Pass, nil},
		{"one letter differs", text("Tom & Jerry are black"), verifier.Pass, nil},
		{"a visible character added", text("Tom & Jerry are back!"), verifier.Pass, nil},
		{"another accent", inMode("Cafè opens at noon", ""), verifier.Pass, nil},
		{"a word in markup added", inMode("<b>Café</b> opens at <i>noon</i> today", "HTML"), verifier.Pass, nil},
		{"a link's words are read, its target is not", inMode(`Sale ends [today](https://shop.org)\!`, "MarkdownV2"), verifier.Stop, sale},
	})
}

// A payload asked again (its chat renamed, its quoted message edited since the
// card) is checked again as the operation it already is: it is no duplicate
// of itself, and still one of any other operation with its text.
func TestDuplicatesLeaveOutTheOperationItself(t *testing.T) {
	h := history{
		{"@news_desk", verifier.Sent{OperationID: "op-self", Text: "Hello, readers.", State: "approved", At: noon.Add(-time.Minute)}},
	}
	c := verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock)
	self := with(func(in *verifier.Input) { in.Operation = "op-self" })
	runCases(t, c, []verdictCase{
		{"its own operation", self, verifier.Pass, nil},
		{"a new call", ok(), verifier.Stop, []string{"duplicates: same text as operation op-self (approved 2026-03-02 11:59 UTC)"}},
	})
	h = append(h, sent{"@news_desk", verifier.Sent{OperationID: "op-other", Text: "hello, readers.", State: "committed", At: noon.Add(-time.Hour)}})
	runCases(t, verifier.New(policy.Verify{DuplicateWindow: 24 * time.Hour}, h, clock), []verdictCase{
		{"another operation still", self, verifier.Stop, []string{"duplicates: same text as operation op-other (committed 2026-03-02 11:00 UTC)"}},
	})
}
