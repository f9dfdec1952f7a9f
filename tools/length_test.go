package tools_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/tools"
)

// A message's limit is 4096 UTF-16 code units of the text after its markup is
// parsed, as Telegram counts: Cyrillic letters are one unit each, emoji beyond the
// Basic Multilingual Plane two, and tags and entities none.
func TestTheLimitCountsAsTelegramDoes(t *testing.T) {
	cyr := func(n int) string { return strings.Repeat("ж", n) }
	tests := []struct {
		name, text, mode string
		wantParts        int    // 0: refused
		wantErr          string // in the refusal
	}{
		{"4096 Cyrillic letters, plain", cyr(4096), "", 1, ""},
		{"4097 Cyrillic letters, plain", cyr(4097), "", 2, ""},
		{"2048 emoji are 4096 units", strings.Repeat("😀", 2048), "", 1, ""},
		{"2049 emoji are 4098 units", strings.Repeat("😀", 2049), "", 2, ""},
		{"4096 Cyrillic letters in bold", "<b>" + cyr(4096) + "</b>", "HTML", 1, ""},
		{"4096 letters written with entities", strings.Repeat("&amp;", 4096), "HTML", 1, ""},
		{"4096 letters with a link", `<a href="https://news.org/a">` + cyr(4096) + "</a>", "HTML", 1, ""},
		{"4096 letters in MarkdownV2", "*" + cyr(4095) + `\.*`, "MarkdownV2", 1, ""},
		{"4097 units in bold", "<b>" + cyr(4095) + "😀</b>", "HTML", 0, "longer than 4096 characters"},
		{"4097 letters in MarkdownV2", "*" + cyr(4097) + "*", "MarkdownV2", 0, "longer than 4096 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: tt.text, ParseMode: tt.mode})
			p, err := tools.SendMessage{}.Prepare(args)
			var ae *tools.ArgsError
			switch {
			case tt.wantParts == 0 && (!errors.As(err, &ae) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Prepare error = %v, want an ArgsError with %q", err, tt.wantErr)
			case tt.wantParts == 0:
				return
			case err != nil:
				t.Fatalf("Prepare = %v, want it accepted", err)
			}
			if got := len(p.Messages()); got != tt.wantParts {
				t.Errorf("messages = %d, want %d", got, tt.wantParts)
			}
			if got := strings.Join(p.Messages(), ""); got != tt.text {
				t.Error("the messages are not the text")
			}
		})
	}
}
