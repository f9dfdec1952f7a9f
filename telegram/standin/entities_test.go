package standin

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

func TestParseTextErrors(t *testing.T) {
	tests := []struct {
		mode, text, want string
	}{
		{"HTML", "<b>bold", `Can't find end tag corresponding to start tag "b"`},
		{"HTML", "🏟 🏟&lt;<abacaba", "Unclosed start tag at byte offset 13"},
		{"HTML", "🏟 🏟&lt;<abac aba>", `Unsupported start tag "abac" at byte offset 13`},
		{"HTML", "🏟 🏟&lt;<i   =aba>", `Empty attribute name in the tag "i" at byte offset 13`},
		{"HTML", "🏟 🏟&lt;<i    aba>", `Can't find end tag corresponding to start tag "i"`},
		{"HTML", "🏟 🏟&lt;<i    aba  =  ", `Unclosed start tag "i" at byte offset 13`},
		{"HTML", "🏟 🏟&lt;<i    aba  =  190azAz-.,", "Unexpected end of name token at byte offset 27"},
		{"HTML", `🏟 🏟&lt;<i    aba  =  "&lt;&gt;&quot;>`, "Unclosed start tag at byte offset 13"},
		{"HTML", "🏟 🏟&lt;</", "Unexpected end tag at byte offset 13"},
		{"HTML", "🏟 🏟&lt;<b></b></", "Unexpected end tag at byte offset 20"},
		{"HTML", "🏟 🏟&lt;<i>a</i   ", "Unclosed end tag at byte offset 17"},
		{"HTML", "🏟 🏟&lt;<i>a</em   >", `Unmatched end tag at byte offset 17, expected "</i>", found "</em>"`},
		{"HTML", "x < y", `Unsupported start tag "" at byte offset 2`},
		{"MarkdownV2", "Version 1.0", `Character '.' is reserved and must be escaped with the preceding '\'`},
		{"MarkdownV2", "🏟 🏟_abacaba", "Can't find end of Italic entity at byte offset 9"},
		{"MarkdownV2", "🏟 🏟_abac * asd ", "Can't find end of Bold entity at byte offset 15"},
		{"MarkdownV2", "🏟 🏟_abac * asd _", "Can't find end of Italic entity at byte offset 21"},
		{"MarkdownV2", "🏟 🏟`", "Can't find end of Code entity at byte offset 9"},
		{"MarkdownV2", "🏟 🏟```", "Can't find end of Pre entity at byte offset 9"},
		{"MarkdownV2", "🏟 🏟__🏟 🏟_", "Can't find end of Italic entity at byte offset 20"},
		{"MarkdownV2", "🏟 🏟_🏟 🏟__", "Can't find end of Underline entity at byte offset 19"},
		{"MarkdownV2", "🏟 🏟__🏟 _🏟___", "Can't find end of Italic entity at byte offset 23"},
		{"MarkdownV2", "[telegram\\.org](asd", "Can't find end of a URL at byte offset 16"},
		{"MarkdownV2", "🏟 🏟!", `Character '!' is reserved and must be escaped with the preceding '\'`},
		{"MarkdownV2", "🏟 🏟||test\\|", "Can't find end of Spoiler entity at byte offset 9"},
		{"Markdown", "a *b", "Can't find end of the entity starting at byte offset 2"},
	}
	for _, tt := range tests {
		t.Run(tt.mode+" "+tt.text, func(t *testing.T) {
			_, _, aerr := parseText(tt.text, tt.mode)
			want := "Bad Request: can't parse entities: " + tt.want
			if aerr == nil || aerr.Code != 400 || aerr.Description != want {
				t.Errorf("got %+v, want 400 %q", aerr, want)
			}
		})
	}
}

func TestParseTextEntities(t *testing.T) {
	tests := []struct {
		mode, text, want string
		entities         []Entity
	}{
		{"", "<b>as is</b>", "<b>as is</b>", nil},
		{"HTML", "➡️ ➡️<i>➡️ ➡️</i>", "➡️ ➡️➡️ ➡️", []Entity{{Type: "italic", Offset: 5, Length: 5}}},
		{"HTML", "&ge;&lt;&gt;&amp;&quot;&#12345678;", `&ge;<>&"&#12345678;`, nil},
		{"HTML", "🏟 🏟<i>🏟 &lt🏟</i>", "🏟 🏟🏟 <🏟", []Entity{{Type: "italic", Offset: 5, Length: 6}}},
		{"HTML", `<a href="https://t.me/x">link</a> <tg-spoiler>s</tg-spoiler>`, "link s",
			[]Entity{{Type: "text_link", Offset: 0, Length: 4, URL: "https://t.me/x"}, {Type: "spoiler", Offset: 5, Length: 1}}},
		{"HTML", `<pre><code class="language-go">x := 1</code></pre>`, "x := 1",
			[]Entity{{Type: "pre", Offset: 0, Length: 6, Language: "go"}}},
		{"HTML", "<b></b>x", "x", nil},
		{"MarkdownV2", "🏟 🏟_abac \\* asd _", "🏟 🏟abac * asd ", []Entity{{Type: "italic", Offset: 5, Length: 11}}},
		{"MarkdownV2", "🏟 🏟_🏟 __🏟___", "🏟 🏟🏟 🏟",
			[]Entity{{Type: "italic", Offset: 5, Length: 5}, {Type: "underline", Offset: 8, Length: 2}}},
		{"MarkdownV2", "||test||", "test", []Entity{{Type: "spoiler", Offset: 0, Length: 4}}},
		{"MarkdownV2", "*Approve* op 42\\?", "Approve op 42?", []Entity{{Type: "bold", Offset: 0, Length: 7}}},
		{"MarkdownV2", "[telegram\\.org](https://telegram.org)", "telegram.org",
			[]Entity{{Type: "text_link", Offset: 0, Length: 12, URL: "https://telegram.org"}}},
		{"MarkdownV2", "```go\nx := 1```", "x := 1", []Entity{{Type: "pre", Offset: 0, Length: 6, Language: "go"}}},
		{"MarkdownV2", "abc\n>def\n>def\n\r>ghi2\njkl", "abc\ndef\ndef\n\rghi2\njkl",
			[]Entity{{Type: "blockquote", Offset: 4, Length: 8}, {Type: "blockquote", Offset: 13, Length: 5}}},
		{"Markdown", "*bold* _it_ `c` [t](http://x.y)", "bold it c t", []Entity{
			{Type: "bold", Offset: 0, Length: 4}, {Type: "italic", Offset: 5, Length: 2},
			{Type: "code", Offset: 8, Length: 1}, {Type: "text_link", Offset: 10, Length: 1, URL: "http://x.y"}}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+" "+tt.text, func(t *testing.T) {
			got, entities, aerr := parseText(tt.text, tt.mode)
			if aerr != nil {
				t.Fatalf("error %q", aerr.Description)
			}
			if got != tt.want || !slices.Equal(entities, tt.entities) {
				t.Errorf("got %q %+v, want %q %+v", got, entities, tt.want, tt.entities)
			}
		})
	}
}

func TestUTF16Len(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{{"", 0}, {"abc", 3}, {"é", 1}, {"😀", 2}, {"➡️", 2}, {"🏟 🏟", 5}}
	for _, tt := range tests {
		if got := utf16Len(tt.s); got != tt.want {
			t.Errorf("utf16Len(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

func TestFixtureDescriptionsAgree(t *testing.T) {
	if got, want := tooManyRequests(errTooMany.RetryAfter).Description, errTooMany.Description; got != want {
		t.Errorf("429 description = %q, want the fixture's %q", got, want)
	}
	if got, want := migrated(errMigrated.MigrateToChatID).reply().body, compact(t, mustFixture("error_400_migrate_to_chat_id.json")); string(got) != want {
		t.Errorf("migrate reply = %s, want %s", got, want)
	}
	if got, want := errChatNotFound.reply().body, compact(t, mustFixture("error_400_chat_not_found.json")); string(got) != want {
		t.Errorf("chat not found reply = %s, want %s", got, want)
	}
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
