package verifier_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

func html(s string) verifier.Input {
	return with(func(in *verifier.Input) { in.Text, in.ParseMode = s, "HTML" })
}

func md(s string) verifier.Input {
	return with(func(in *verifier.Input) { in.Text, in.ParseMode = s, "MarkdownV2" })
}

func TestSchema(t *testing.T) {
	target := func(s string) verifier.Input { return with(func(in *verifier.Input) { in.Target = s }) }
	runCases(t, verifier.New(policy.Verify{MaxLength: 20}, nil, clock), []verdictCase{
		{"chat id", target("-1001234567890"), verifier.Pass, nil},
		{"username", target("@news_desk"), verifier.Pass, nil},
		{"short username", target("@news"), verifier.Repair, []string{`schema: target "@news" is not a chat id or @username`}},
		{"no target", target(""), verifier.Repair, []string{`schema: target "" is not a chat id or @username`}},
		{"empty text", text(" \n "), verifier.Repair, []string{"schema: text is empty"}},
		{"at max_length", text(strings.Repeat("a", 20)), verifier.Pass, nil},
		{"over max_length", text(strings.Repeat("a", 21)), verifier.Repair, []string{"schema: text is 21 characters long, max_length is 20"}},
		{"UTF-16 units", text(strings.Repeat("😀", 11)), verifier.Repair, []string{"schema: text is 22 characters long, max_length is 20"}},
		{"markup not counted", html("<b>" + strings.Repeat("a", 20) + "</b>"), verifier.Pass, nil},
		{"over ten messages", text(strings.Repeat("a", 40961)), verifier.Stop, []string{"schema: text is 40961 characters long, more than 10 messages hold (40960)"}},
		{"legacy Markdown", with(func(in *verifier.Input) { in.ParseMode = "Markdown" }), verifier.Repair, []string{`schema: parse mode "Markdown" is not HTML or MarkdownV2`}},
		{"empty after markup", html("<b></b>"), verifier.Repair, []string{"schema: text is empty"}},
	})
}

func TestSchemaHTML(t *testing.T) {
	repair := func(reason string) []string { return []string{"schema: HTML: " + reason} }
	runCases(t, verifier.New(policy.Verify{}, nil, clock), []verdictCase{
		{"every tag", html(`<b>b</b><strong>s</strong><i>i</i><em>e</em><u>u</u><ins>i</ins><s>s</s><strike>s</strike><del>d</del>` +
			`<a href="https://news.org/a?x=1&amp;y=2">a</a><code>c</code><pre><code class="language-go">x</code></pre>` +
			`<span class="tg-spoiler">s</span><tg-spoiler>s</tg-spoiler><blockquote expandable>q</blockquote>` +
			`<tg-emoji emoji-id="5368324170671202286">👍</tg-emoji>`), verifier.Pass, nil},
		{"entities", html("1 &lt; 2 &amp;&amp; 3 &gt; 2 &quot;ok&quot; &#65; &#x1F600;"), verifier.Pass, nil},
		{"bare >", html("3 > 2"), verifier.Pass, nil},
		{"upper-case tag", html("<B>bold</B>"), verifier.Pass, nil},
		{"unknown tag", html("line<br>line"), verifier.Repair, repair("unknown tag <br> at character 5")},
		{"never closed", html("<b>bold <i>both</i>"), verifier.Repair, repair("<b> is never closed")},
		{"misnested", html("<b><i>x</b></i>"), verifier.Repair, repair("</b> at character 8 while <i> is open")},
		{"closes nothing", html("x</b>"), verifier.Repair, repair("</b> at character 2 closes nothing")},
		{"bare &", html("Tom & Jerry"), verifier.Repair, repair(`bare "&" at character 5 (write &amp;)`)},
		{"bare & before ;", html("R&D; plans"), verifier.Repair, repair("unknown entity &D; at character 2 (use &lt; &gt; &amp; &quot; or a number)")},
		{"named entity", html("a&nbsp;b"), verifier.Repair, repair("unknown entity &nbsp; at character 2 (use &lt; &gt; &amp; &quot; or a number)")},
		{"bare <", html("1 < 2"), verifier.Repair, repair(`bare "<" at character 3 (write &lt;)`)},
		{"unterminated tag", html("see <b"), verifier.Repair, repair(`bare "<" at character 5 (write &lt;)`)},
		{"link without href", html("<a>here</a>"), verifier.Repair, repair("<a> at character 1 has no href")},
		{"span without class", html("<span>x</span>"), verifier.Repair, repair(`<span> at character 1 needs class="tg-spoiler"`)},
		{"emoji without id", html("<tg-emoji>👍</tg-emoji>"), verifier.Repair, repair("<tg-emoji> at character 1 has no emoji-id")},
		{"first problem only", html("a & b <br>"), verifier.Repair, repair(`bare "&" at character 3 (write &amp;)`)},
	})
}

func TestSchemaMarkdownV2(t *testing.T) {
	repair := func(reason string) []string { return []string{"schema: MarkdownV2: " + reason} }
	runCases(t, verifier.New(policy.Verify{}, nil, clock), []verdictCase{
		{"escaped", md(`Price: 5\.00 \- 10% off\! \(today\)`), verifier.Pass, nil},
		{"entities", md("*bold* _italic_ __under__ ~strike~ ||spoiler|| *bold _both_*"), verifier.Pass, nil},
		{"code is literal", md("run `a.b(c)` and\n```go\nx := 1 + 2\n```"), verifier.Pass, nil},
		{"link", md(`[the news](https://news.org/a_\(b\))`), verifier.Pass, nil},
		{"custom emoji", md("![👍](tg://emoji?id=5368324170671202286)"), verifier.Pass, nil},
		{"quotes", md(">quoted\n**>expandable"), verifier.Pass, nil},
		{"unescaped dot", md("Hello, readers."), verifier.Repair, repair(`unescaped "." at character 15 (write \.)`)},
		{"unescaped dash", md("a - b"), verifier.Repair, repair(`unescaped "-" at character 3 (write \-)`)},
		{"mid-line >", md("3 > 2"), verifier.Repair, repair(`unescaped ">" at character 3 (write \>)`)},
		{"never closed", md("*bold"), verifier.Repair, repair(`"*" is never closed`)},
		{"across", md("*a _b* c_"), verifier.Repair, repair(`"*" at character 6 closes across "_"`)},
		{"open code", md("`code"), verifier.Repair, repair(`"` + "`" + `" at character 1 is never closed`)},
		{"trailing backslash", md(`a\`), verifier.Repair, repair(`a "\" at the end escapes nothing (write \\)`)},
		{"link without url", md("[text] more"), verifier.Repair, repair(`link text at character 6 has no "(url)" after it`)},
		{"link not closed", md("[text](https://news.org"), verifier.Repair, repair(`link at character 6 has no closing ")"`)},
	})
}
