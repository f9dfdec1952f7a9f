package verifier

import (
	"context"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// urlInText finds the URLs Telegram links in plain text by their scheme, even one
// glued to a word ("xhttps://a.org" links https://a.org); trimURL then drops the
// punctuation that ends the sentence rather than the URL.
var urlInText = regexp.MustCompile(`(?i)(?:https?|ftp|tonsite)://[^\s<>"]*`)

// hasScheme matches a link that names its scheme (https:, tg:, mailto:); hostPort
// one that starts with a host and a port instead ("evil.net:8080/login").
var (
	hasScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	hostPort  = regexp.MustCompile(`^[\pL\pN_.-]+:[0-9]+(?:[/?#]|$)`)
)

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

// links checks every link in the visible text, with a scheme or without, and every
// link target in the markup, and the whole text for placeholders. Each problem is
// reported once.
func (c Checker) links(_ context.Context, p *payload) []finding {
	var fs []finding
	if u, err := url.Parse(p.in.URL); p.in.URL != "" && err == nil {
		// A request's own address is no reader's link: only the domain lists
		// apply to it (a service on this machine is no placeholder).
		fs = append(fs, c.checkDomain(hostOf(u))...)
	}
	all := p.visible + "\n" + strings.Join(p.hrefs, "\n")
	for _, re := range placeholderTexts {
		if m := re.FindString(all); m != "" {
			fs = append(fs, repairf("placeholder text %q", m))
		}
	}
	urls, rest := p.urls()
	for _, u := range urls {
		fs = append(fs, c.checkURL(u)...)
	}
	for _, b := range bareNames(rest) {
		if b.link {
			fs = append(fs, c.checkBare(b.host)...)
		} else {
			fs = append(fs, c.denied(b.host)...)
		}
	}
	seen := map[finding]bool{}
	return slices.DeleteFunc(fs, func(f finding) bool {
		dup := seen[f]
		seen[f] = true
		return dup
	})
}

// urls lists the URLs with a scheme in the visible text, then the link targets of the
// markup; rest is the visible text with those URLs blanked out, for bareNames.
func (p *payload) urls() (urls []string, rest string) {
	blank := []byte(p.visible)
	for _, m := range urlInText.FindAllStringIndex(p.visible, -1) {
		urls = append(urls, trimURL(p.visible[m[0]:m[1]]))
		for i := m[0]; i < m[1]; i++ {
			blank[i] = ' '
		}
	}
	return append(urls, p.hrefs...), string(blank)
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

// checkURL checks a URL of the text or a link target of the markup: its form, and
// the host of a web link against the placeholders and the domain lists.
func (c Checker) checkURL(raw string) []finding {
	if !hasScheme.MatchString(raw) || hostPort.MatchString(raw) {
		// Telegram reads a link target without a scheme as http://.
		u, err := url.Parse("http://" + raw)
		if err != nil || !validHost(hostOf(u)) {
			return []finding{repairf("link %q is not an absolute URL", raw)}
		}
		return c.checkHost(raw, hostOf(u))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return []finding{repairf("malformed URL %q", raw)}
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ftp", "tonsite":
		return c.checkHost(raw, hostOf(u))
	}
	return nil // tg:, mailto: and the like have no host to check
}

// hostOf is the URL's host in lower case, without the dot that may end it.
func hostOf(u *url.URL) string {
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// checkHost checks the host of the link raw, in lower case.
func (c Checker) checkHost(raw, host string) []finding {
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

// checkBare checks a name Telegram links without a scheme.
func (c Checker) checkBare(host string) []finding {
	if placeholderHost(host) {
		return []finding{repairf("placeholder host %s", host)}
	}
	return c.checkDomain(host)
}

// denied reports a host in deny_domains.
func (c Checker) denied(host string) []finding {
	for _, d := range c.cfg.Links.DenyDomains {
		if inDomain(host, d) {
			return []finding{repairf("domain %s is in deny_domains (%s)", host, d)}
		}
	}
	return nil
}

func (c Checker) checkDomain(host string) []finding {
	if fs := c.denied(host); fs != nil {
		return fs
	}
	lists := c.cfg.Links
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
