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

// TestBareDomainsMeetLinkLists: Telegram links evil.net/login and www.evil.net with no
// scheme, and text links and hrefs need none either; the domain lists see them all,
// in any case, with their subdomains.
func TestBareDomainsMeetLinkLists(t *testing.T) {
	deny := func(host string) []string {
		return []string{"links: domain " + host + " is in deny_domains (evil.net)"}
	}
	cfg := policy.Verify{Links: policy.Links{DenyDomains: []string{"evil.net"}}}
	runCases(t, verifier.New(cfg, nil, clock), []verdictCase{
		{"domain and path", text("Log in at evil.net/login now"), verifier.Repair, deny("evil.net")},
		{"www", text("www.evil.net"), verifier.Repair, deny("www.evil.net")},
		{"capitals", text("Visit EVIL.NET today"), verifier.Repair, deny("evil.net")},
		{"subdomain", text("see a.evil.net/x?y=1."), verifier.Repair, deny("a.evil.net")},
		{"ends a sentence", text("Go to evil.net."), verifier.Repair, deny("evil.net")},
		{"in brackets", text("(evil.net)"), verifier.Repair, deny("evil.net")},
		{"port", text("admin at evil.net:8080/admin"), verifier.Repair, deny("evil.net")},
		{"user info", text("open user:pw@evil.net/x"), verifier.Repair, deny("evil.net")},
		{"ftp URL", text("ftp://evil.net/file"), verifier.Repair, deny("evil.net")},
		{"scheme glued to a word", text("xhttps://evil.net/a"), verifier.Repair, deny("evil.net")},
		{"capitalised domain", text("Evil.Net"), verifier.Repair, deny("evil.net")},
		{"HTML text", html("<b>evil.net</b>"), verifier.Repair, deny("evil.net")},
		{"HTML href without a scheme", html(`<a href="evil.net/login">log in</a>`), verifier.Repair, deny("evil.net")},
		{"HTML href in capitals", html(`<a href="HTTPS://EVIL.NET/">x</a>`), verifier.Repair, deny("evil.net")},
		{"MarkdownV2 text", md(`log in at evil\.net`), verifier.Repair, deny("evil.net")},
		{"MarkdownV2 link without a scheme", md(`[log in](www.evil.net/login)`), verifier.Repair, deny("www.evil.net")},
		{"other domain", text("news.org/a and notevil.net"), verifier.Pass, nil},
		{"e-mail address", text("write to desk@evil.net"), verifier.Pass, nil},
	})
	allow := policy.Verify{Links: policy.Links{AllowDomains: []string{"news.org"}}}
	notAllowed := func(host string) []string { return []string{"links: domain " + host + " is not in allow_domains"} }
	runCases(t, verifier.New(allow, nil, clock), []verdictCase{
		{"allowed", text("read news.org/a and www.news.org"), verifier.Pass, nil},
		{"not allowed", text("read other.org/a"), verifier.Repair, notAllowed("other.org")},
		{"IP address", text("server 203.0.113.7 is up"), verifier.Repair, notAllowed("203.0.113.7")},
		{"country domain", text("see README.md"), verifier.Repair, notAllowed("readme.md")},
		// Not links in Telegram, so nothing to allow.
		{"file name", text("attach file.txt and config.json, run main.go"), verifier.Pass, nil},
		{"abbreviation", text("tools, e.g. a saw, i.e. this"), verifier.Pass, nil},
		{"version", text("version 1.2.3 and 3.14"), verifier.Pass, nil},
		{"sentence with no space", text("It is done.Next we ship."), verifier.Pass, nil},
		{"capitalised word", text("Mr.Smith said hello.World"), verifier.Pass, nil},
		{"path", text("open docs/index.html"), verifier.Pass, nil},
		{"hashtag", text("#release.notes"), verifier.Pass, nil},
		{"e-mail address", text("mail desk@other.org"), verifier.Pass, nil},
		{"placeholder", text("at example.com"), verifier.Repair, []string{"links: placeholder host example.com"}},
	})
}
