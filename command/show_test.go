package command_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
)

func TestVisibleWritesHidingCharactersAsEscapes(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text is itself", "Hello, мир 👋\n\ttab", "Hello, мир 👋\n\ttab"},
		{"carriage return", "pay 42\rpay 666", `pay 42\rpay 666`},
		{"ESC and other C0", "a\x1b[2Kb\x00c\x07", "a<U+001B>[2Kb<U+0000>c<U+0007>"},
		{"DEL and C1", "a\x7fb\u009bc\u0085", "a<U+007F>b<U+009B>c<U+0085>"},
		{"bidi overrides and embeddings", "\u202atxt\u202b\u202c\u202d\u202e", "<U+202A>txt<U+202B><U+202C><U+202D><U+202E>"},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", "<U+2066>a<U+2067>b<U+2068>c<U+2069>"},
		{"direction marks", "a\u200eb\u200fc\u061c", "a<U+200E>b<U+200F>c<U+061C>"},
		{"zero-width and soft hyphen", "a\u200bb\u200cc\u2060d\ufeffe\u00adf", "a<U+200B>b<U+200C>c<U+2060>d<U+FEFF>e<U+00AD>f"},
		{"a lone zero-width joiner", "a\u200db", "a<U+200D>b"},
		{"an emoji sequence keeps its joiner", "👨\u200d👩\u200d👧", "👨\u200d👩\u200d👧"},
		{"line and paragraph separators", "a\u2028b\u2029c", "a<U+2028>b<U+2029>c"},
	}
	for _, tt := range tests {
		if got := command.Visible(tt.in); got != tt.want {
			t.Errorf("%s: Visible(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestRenderingNamesEveryLinksRealTarget(t *testing.T) {
	tests := []struct {
		name, text, mode string
		want             []string // lines the rendering holds
		not              []string // lines it must not hold
	}{
		{"plain text needs none", "see https://bank.com", "", nil, []string{"recipient"}},
		{"an entity-encoded href", `<a href="&#104;ttps://evil.example/login">https://bank.com/login</a>`, "HTML",
			[]string{"The recipient will see (22 characters):", "https://bank.com/login",
				`1. "https://bank.com/login" -> https://evil.example/login  ⚠ the words show another address than the link opens`}, nil},
		{"a hex-encoded href", `<a href="&#x68;ttps&#58;//evil.example/login">bank.com</a>`, "HTML",
			[]string{`1. "bank.com" -> https://evil.example/login  ⚠`}, nil},
		{"the same host is no disguise", `<a href="https://www.bank.com/login?x=1">https://bank.com/login</a>`, "HTML",
			[]string{`1. "https://bank.com/login" -> https://www.bank.com/login?x=1`}, []string{"⚠"}},
		{"words that name no address", `<a href="https://news.org/a">read more</a>`, "HTML",
			[]string{`1. "read more" -> https://news.org/a`}, []string{"⚠"}},
		{"MarkdownV2 link", `Log in at [https://bank\.com/login](https://evil.example/login)\.`, "MarkdownV2",
			[]string{"Log in at https://bank.com/login.", `1. "https://bank.com/login" -> https://evil.example/login  ⚠`}, nil},
		{"MarkdownV2 escaped parenthesis in the target", `[docs](https://evil.example/a\)b)`, "MarkdownV2",
			[]string{`1. "docs" -> https://evil.example/a)b`}, nil},
		{"tg:// target", `<a href="tg://resolve?domain=bank_support">@bank</a>`, "HTML",
			[]string{`1. "@bank" -> tg://resolve?domain=bank_support`}, nil},
		{"a tg:// target behind an address", `[bank.com](tg://resolve?domain=evil)`, "MarkdownV2",
			[]string{`1. "bank.com" -> tg://resolve?domain=evil  ⚠`}, nil},
		{"a control hidden in an entity", `pay &#8238;gnp.exe`, "HTML",
			[]string{"pay <U+202E>gnp.exe", "written as"}, nil},
		{"controls in link words and targets", "<a href=\"https://evil.example/\u202e\">bank\u202ecom</a>", "HTML",
			[]string{`1. "bank<U+202E>com" -> https://evil.example/<U+202E>`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := command.Rendering(tt.text, tt.mode)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Rendering lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("Rendering holds %q:\n%s", n, got)
				}
			}
		})
	}
}
