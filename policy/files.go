package policy

import (
	"net/url"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Files says where the file tools (a photo, a document) may read what they
// send. A file is read once, when its call is prepared, and kept by its
// content; these rules bound what an agent can make the bot read at all, as
// an approver sees only a document's name, size and hash, never its contents.
type Files struct {
	// Roots are the folders a path may name a file in (a file under one of
	// them, symbolic links resolved). None: no path is read, only addresses.
	Roots []string `json:"roots,omitempty"`
	// FetchPrivate lets an address name a loopback, private or link-local host
	// (a cloud's metadata service is one). Off: such an address is refused, so
	// that the bot never posts what only its own network can reach.
	FetchPrivate bool `json:"fetch_private,omitempty"`
	// FetchProxy is the http(s) proxy every fetch goes through (none: the bot
	// connects itself, and never through a proxy named by the environment).
	// With a proxy the bot connects only to it, whatever its address, and it
	// is the proxy that reaches the address: FetchPrivate then guards nothing,
	// and the proxy must refuse private and metadata addresses itself.
	FetchProxy string `json:"fetch_proxy,omitempty"`
}

func (d *decoder) files(n *yaml.Node, path string, f *Files) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"roots": func(n *yaml.Node, field string) {
			for _, r := range d.strings(n, field) {
				if r == "" {
					d.errorf(n, field, "a root is a folder's path, got an empty string")
					continue
				}
				f.Roots = append(f.Roots, filepath.Clean(r))
			}
		},
		"fetch_private": func(n *yaml.Node, field string) { d.bool(n, field, &f.FetchPrivate) },
		"fetch_proxy": func(n *yaml.Node, field string) {
			f.FetchProxy = d.string(n, field)
			if u, err := url.Parse(f.FetchProxy); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.errorf(n, field, "a proxy is an http or https address with a host (http://proxy.internal:3128)")
			}
		},
	})
}
