package verifier_test

import (
	"testing"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

func TestLinks(t *testing.T) {
	repair := func(reasons ...string) []string {
		for i, r := range reasons {
			reasons[i] = "links: " + r
		}
		return reasons
	}
	runCases(t, verifier.New(policy.Verify{}, nil, clock), []verdictCase{
		{"URL ending a sentence", text("Read https://news.org/a."), verifier.Pass, nil},
		{"URL in brackets", text("(see https://news.org/a_(b))"), verifier.Pass, nil},
		{"IP host", text("http://203.0.113.7/status"), verifier.Pass, nil},
		{"no host", text("https://"), verifier.Repair, repair(`URL "https://" has no host`)},
		{"empty host", text("https:///path"), verifier.Repair, repair(`URL "https:///path" has no host`)},
		{"one label", text("https://news/a"), verifier.Repair, repair(`URL "https://news/a" has no valid host`)},
		{"malformed", text("http://[::1"), verifier.Repair, repair(`malformed URL "http://[::1"`)},
		{"example.com", text("https://www.example.com/x"), verifier.Repair, repair("placeholder host www.example.com")},
		{"example.net", text("HTTPS://EXAMPLE.NET"), verifier.Repair, repair("placeholder host example.net")},
		{"localhost", text("http://localhost:8080/"), verifier.Repair, repair("placeholder host localhost")},
		{"loopback", text("http://127.0.0.1/"), verifier.Repair, repair("placeholder host 127.0.0.1")},
		{"reserved TLD", text("https://site.test/"), verifier.Repair, repair("placeholder host site.test")},
		{"same URL once", text("https://example.com and https://example.com"), verifier.Repair, repair("placeholder host example.com")},
		{"href", html(`<a href="https://example.org/x">read</a>`), verifier.Repair, repair("placeholder host example.org")},
		{"relative href", html(`<a href="/news">read</a>`), verifier.Repair, repair(`link "/news" is not an absolute URL`)},
		{"tg href", html(`<a href="tg://user?id=42">Ann</a>`), verifier.Pass, nil},
		{"MarkdownV2 link", md(`[read](https://localhost/a)`), verifier.Repair, repair("placeholder host localhost")},
		{"TODO", text("Launch on TODO."), verifier.Repair, repair(`placeholder text "TODO"`)},
		{"TBD", text("Price: TBD"), verifier.Repair, repair(`placeholder text "TBD"`)},
		{"xxx", text("Call XXXX now"), verifier.Repair, repair(`placeholder text "XXXX"`)},
		{"lorem ipsum", text("Lorem ipsum dolor sit amet"), verifier.Repair, repair(`placeholder text "Lorem ipsum"`)},
		{"template", text("Hi {{name}}!"), verifier.Repair, repair(`placeholder text "{{"`, `placeholder text "}}"`)},
		{"insert", text("See <insert link>"), verifier.Repair, repair(`placeholder text "<insert"`)},
		{"insert in HTML", html("See &lt;INSERT link&gt;"), verifier.Repair, repair(`placeholder text "<INSERT"`)},
		{"template in href", html(`<a href="https://news.org/{{slug}}">read</a>`), verifier.Repair, repair(`placeholder text "{{"`, `placeholder text "}}"`)},
		{"ordinary words", text("My todo list, xxl shirts, tbd later."), verifier.Pass, nil},
	})
}

func TestLinksDomainLists(t *testing.T) {
	cfg := policy.Verify{Links: policy.Links{AllowDomains: []string{"news.org", "cdn.net"}, DenyDomains: []string{"ads.news.org"}}}
	runCases(t, verifier.New(cfg, nil, clock), []verdictCase{
		{"allowed", text("https://news.org/a"), verifier.Pass, nil},
		{"allowed subdomain", text("https://www.news.org/a https://img.cdn.net/b"), verifier.Pass, nil},
		{"denied subdomain", text("https://x.ads.news.org/a"), verifier.Repair, []string{"links: domain x.ads.news.org is in deny_domains (ads.news.org)"}},
		{"not allowed", text("https://evil.com/a"), verifier.Repair, []string{"links: domain evil.com is not in allow_domains"}},
		{"suffix is not a subdomain", text("https://notnews.org/"), verifier.Repair, []string{"links: domain notnews.org is not in allow_domains"}},
		{"href", html(`<a href="https://evil.com">x</a>`), verifier.Repair, []string{"links: domain evil.com is not in allow_domains"}},
	})
	deny := policy.Verify{Links: policy.Links{DenyDomains: []string{"evil.com"}}}
	runCases(t, verifier.New(deny, nil, clock), []verdictCase{
		{"deny only", text("https://news.org https://EVIL.com/x"), verifier.Repair, []string{"links: domain evil.com is in deny_domains (evil.com)"}},
	})
}
