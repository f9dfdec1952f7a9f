package verifier

import (
	_ "embed"
	"net/netip"
	"regexp"
	"strings"
)

// Telegram makes a link of a domain written without a scheme: "evil.net/login" and
// "www.evil.net" are links in a message as much as "https://evil.net" is. The rules
// here follow Telegram's own, so that what is a link to a reader is one to the domain
// lists, and "file.txt", "e.g.", "1.2.3" and "done.Next" are not.

// bareInText finds what may be a link without a scheme: dotted labels, a port, a path.
// bareLink decides whether it is one.
var bareInText = regexp.MustCompile(`[\pL\pN_-]+(?:\.[\pL\pN_-]+)+(?::[0-9]{1,5})?(?:[/?#][^\s<>"]*)?`)

//go:embed tlds.txt
var tldFile string

// tlds are the top-level domains Telegram links under without a scheme.
var tlds = func() map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(tldFile, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			m[line] = true
		}
	}
	return m
}()

// bare is a name found in text without a scheme.
type bare struct {
	host string // lower case
	// link: Telegram links it. A name that is not a link is still checked against
	// deny_domains: a denied domain named in a message is refused however it is
	// written, and a new top-level domain missing from tlds.txt lets nothing through.
	link bool
	// at and end are the bytes of the name as written in the text it was found in
	// (host is lower-cased, which may change its length).
	at, end int
}

// bareNames lists the names without a scheme in text, where text has its URLs with
// a scheme blanked out. Names after "/" or "#" (a path, a hashtag) and e-mail
// addresses are left out, as Telegram leaves them.
func bareNames(text string) []bare {
	var names []bare
	for _, m := range bareInText.FindAllStringIndex(text, -1) {
		s := trimURL(text[m[0]:m[1]])
		domain := s[:strings.IndexAny(s+"/", ":/?#")]
		var before byte
		if m[0] > 0 {
			before = text[m[0]-1]
		}
		switch {
		case before == '/' || before == '#':
			continue
		case before == '@' && domain == s:
			continue // an e-mail address; with a path or a port it is a link with user info
		}
		host := strings.ToLower(domain)
		names = append(names, bare{host: host, link: before != '.' && bareLink(domain), at: m[0], end: m[0] + len(domain)})
	}
	return names
}

// bareLink reports whether Telegram links the domain when it stands without a scheme:
// an IPv4 address, or labels under a known top-level domain.
func bareLink(domain string) bool {
	if a, err := netip.ParseAddr(domain); err == nil && a.Is4() {
		return true
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if len(l) >= 64 || strings.HasSuffix(l, "-") {
			return false
		}
	}
	if !strings.ContainsFunc(domain, func(r rune) bool { return r < '0' || r > '9' }) {
		return false // 1.2.3
	}
	tld := labels[len(labels)-1]
	if strings.Contains(labels[len(labels)-2], "_") {
		return false
	}
	return knownTLD(tld)
}

// knownTLD reports whether tld is one, in any case but one: a capital and then small
// letters ("done.Next") starts a sentence, it does not end a domain.
func knownTLD(tld string) bool {
	lower := strings.ToLower(tld)
	if strings.HasPrefix(lower, "xn--") {
		return len(lower) > 5 && !strings.ContainsFunc(lower[4:], func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		})
	}
	r, lr := []rune(tld), []rune(lower)
	if len(r) < 2 || len(r) == len(lr) && r[0] != lr[0] && string(r[1:]) == string(lr[1:]) {
		return false
	}
	return tlds[lower]
}
