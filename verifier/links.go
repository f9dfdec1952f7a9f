package verifier

import (
	"context"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
)

// urlInText finds http and https URLs in plain text; trimURL then drops the
// punctuation that ends the sentence rather than the URL.
var urlInText = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]*`)

// hasScheme matches a link that names its scheme (https:, tg:, mailto:).
var hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// placeholderTexts are the marks of a draft that was never finished.
var placeholderTexts = []*regexp.Regexp{
	regexp.MustCompile(`\bTODO\b`),
	regexp.MustCompile(`\bTBD\b`),
	regexp.MustCompile(`(?i)\bx{3,}\b`),
	regexp.MustCompile(`(?i)lorem ipsum`),
	regexp.MustCompile(`\{\{`),
	regexp.MustCompile(`\}\}`),
	regexp.MustCompile(`(?i)<insert`),
}

// placeholderHosts are never a real reader's destination: the documentation domains,
// the reserved top-level domains (RFC 2606) and this machine.
var (
	placeholderDomains = []string{"example.com", "example.org", "example.net", "localhost"}
	reservedTLDs       = []string{"example", "invalid", "test", "localhost"}
)

var domainName = regexp.MustCompile(`^([\pL\pN]([\pL\pN-]*[\pL\pN])?\.)+[\pL\pN]([\pL\pN-]*[\pL\pN])?$`)

// links checks every URL in the visible text and every link target in the markup,
// and the whole text for placeholders.
func (c Checker) links(_ context.Context, p *payload) []finding {
	var fs []finding
	all := p.visible + "\n" + strings.Join(p.hrefs, "\n")
	for _, re := range placeholderTexts {
		if m := re.FindString(all); m != "" {
			fs = append(fs, repairf("placeholder text %q", m))
		}
	}
	seen := map[string]bool{}
	for _, u := range p.urls() {
		if !seen[u] {
			seen[u] = true
			fs = append(fs, c.checkURL(u)...)
		}
	}
	return fs
}

// urls lists the http(s) URLs of the text, then the link targets of the markup.
func (p *payload) urls() []string {
	var urls []string
	for _, u := range urlInText.FindAllString(p.visible, -1) {
		urls = append(urls, trimURL(u))
	}
	return append(urls, p.hrefs...)
}

// trimURL drops trailing punctuation, and closing brackets the URL did not open.
func trimURL(u string) string {
	for u != "" {
		last := u[len(u)-1]
		open := map[byte]byte{')': '(', ']': '[', '}': '{'}[last]
		switch {
		case strings.IndexByte(".,;:!?'", last) >= 0:
		case open != 0 && strings.Count(u, string(open)) < strings.Count(u, string(last)):
		default:
			return u
		}
		u = u[:len(u)-1]
	}
	return u
}

func (c Checker) checkURL(raw string) []finding {
	if !hasScheme.MatchString(raw) {
		return []finding{repairf("link %q is not an absolute URL", raw)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return []finding{repairf("malformed URL %q", raw)}
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil // tg:, mailto: and the like have no host to check
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	switch {
	case host == "":
		return []finding{repairf("URL %q has no host", raw)}
	case placeholderHost(host):
		return []finding{repairf("placeholder host %s", host)}
	case !validHost(host):
		return []finding{repairf("URL %q has no valid host", raw)}
	}
	return c.checkDomain(host)
}

func (c Checker) checkDomain(host string) []finding {
	lists := c.cfg.Links
	for _, d := range lists.DenyDomains {
		if inDomain(host, d) {
			return []finding{repairf("domain %s is in deny_domains (%s)", host, d)}
		}
	}
	if len(lists.AllowDomains) == 0 {
		return nil
	}
	for _, d := range lists.AllowDomains {
		if inDomain(host, d) {
			return nil
		}
	}
	return []finding{repairf("domain %s is not in allow_domains", host)}
}

// inDomain reports whether host is domain or one of its subdomains.
func inDomain(host, domain string) bool {
	domain = strings.ToLower(domain)
	return host == domain || strings.HasSuffix(host, "."+domain)
}

func placeholderHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.IsLoopback() || a.IsUnspecified()
	}
	for _, d := range placeholderDomains {
		if inDomain(host, d) {
			return true
		}
	}
	for _, tld := range reservedTLDs {
		if strings.HasSuffix(host, "."+tld) {
			return true
		}
	}
	return false
}

// validHost accepts an IP address or a domain name of two labels or more.
func validHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return domainName.MatchString(host)
}
