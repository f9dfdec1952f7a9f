package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // photos may be GIF, JPEG or PNG, as Telegram takes them
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
	"github.com/countersign/countersign/verifier"
)

// The file tools read a file once, when the call is prepared, from one of three
// sources: a path under one of the policy's files.roots, an http(s) address,
// or a file a person attached in the chat ("telegram:<file_id>"). The bytes go
// into the FileStore under their SHA-256, which the payload names, and the
// commit sends the stored bytes: never the path or the address again.

// Attachment is one stored file with its bytes, as an Uploader sends it.
type Attachment struct {
	action.File
	Data []byte
}

// Upload is one send of files: a photo or a document with its caption, or an
// album of 2 to 10 files with theirs.
type Upload struct {
	Target    string
	Files     []Attachment
	Caption   string
	ParseMode string
}

// Uploader sends files to a chat (Telegram's sendPhoto, sendDocument and
// sendMediaGroup): one Delivery per message, in order. Its errors are a
// Sender's.
type Uploader interface {
	Upload(ctx context.Context, u Upload) ([]Delivery, error)
}

// Downloader reads a file a person attached in the chat, by its Telegram
// file_id, with the name it came with ("" when it had none).
type Downloader interface {
	Download(ctx context.Context, fileID string) (io.ReadCloser, string, error)
}

// TelegramFile is the prefix of a file source that names a chat attachment.
const TelegramFile = "telegram:"

// Media is what the file tools read with: where files are kept, which paths
// and addresses they may read, and how a chat attachment is fetched.
type Media struct {
	Store      FileStore
	Policy     policy.Files
	Downloader Downloader
}

// fetchTimeout bounds the download of an address at prepare time.
const fetchTimeout = 60 * time.Second

// ErrPrivateAddress is the error of a fetch refused because the address it
// would connect to is not public (files.fetch_private is off).
var ErrPrivateAddress = errors.New("a private address")

// publicOnly is the check of an address dialled: the IANA IPv4 and IPv6
// Special-Purpose Address Registries as code.dny.dev/ssrf keeps them (its list
// is generated from the registries, so it stays one list kept by others rather
// than one written here), on any port. It refuses every IPv6 address outside
// global unicast (2000::/3), so IPv4-compatible addresses, and 6to4
// (2002::/16) and Teredo (in 2001::/23) are refused whole.
var publicOnly = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

// nat64 is the NAT64 well-known prefix (RFC 6052): an address in it reaches
// the IPv4 address in its last 32 bits, as a host on an IPv6-only network with
// DNS64 reaches every IPv4-only site.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// PublicAddress reports whether a connection to ip reaches the public
// internet: no loopback, private, shared (100.64.0.0/10, carrier-grade NAT
// and Alibaba Cloud's metadata), link-local (the metadata services at
// 169.254.169.254), benchmarking, documentation, multicast or reserved
// address, in either family. An IPv4-mapped address and one in NAT64's
// prefix are judged by the IPv4 address they reach. Its error wraps
// ErrPrivateAddress.
func PublicAddress(ip netip.Addr) error {
	a := ip.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	if err := publicOnly.SafeAddr(a); err != nil {
		return fmt.Errorf("%s is %w", ip, ErrPrivateAddress)
	}
	return nil
}

// FetchClient is the client the file tools fetch an address with: at most
// three redirects, http and https only, and, unless files.fetch_private is
// set, no connection to an address that is not public (PublicAddress),
// checked on the address dialled so that a name resolving to one is refused
// too. It never takes a proxy from the environment (HTTP_PROXY, HTTPS_PROXY),
// as a proxy would fetch for the bot what the check refuses; only one named by
// files.fetch_proxy, which is then the one host the bot connects to.
func FetchClient(files policy.Files) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{Proxy: nil, TLSHandshakeTimeout: 10 * time.Second}
	if proxy, err := url.Parse(files.FetchProxy); files.FetchProxy != "" && err == nil {
		tr.Proxy = http.ProxyURL(proxy) // policy.Parse checked it is an address
	} else if !files.FetchPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%s is not an address: %w", address, ErrPrivateAddress)
			}
			if err := PublicAddress(ap.Addr()); err != nil {
				return fmt.Errorf("%w: files.fetch_private allows it", err)
			}
			return nil
		}
	}
	tr.DialContext = d.DialContext
	return &http.Client{
		Timeout:   fetchTimeout,
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxFetchRedirects { // via holds the first request and each redirect followed
				return fmt.Errorf("more than %d redirects", maxFetchRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to %s: only http and https are fetched", req.URL.Scheme)
			}
			return nil
		},
	}
}

// maxFetchRedirects is how many redirects a fetch follows.
const maxFetchRedirects = 3

// maxRead is the most any file tool reads: a document's limit. A photo
// larger than its own limit is read, so that the verifier can say so.
const maxRead = verifier.MaxDocumentBytes

// read reads the file source names into the store as kind, or returns a
// refusal that says why it could not.
func (m Media) read(ctx context.Context, in args, kind, source string) (action.File, error) {
	if m.Store == nil {
		return action.File{}, in.refuse("this process keeps no files, so it cannot send one")
	}
	if secret.Contains(source) {
		// The source is kept in the payload, so in the journal and on the card.
		return action.File{}, in.refuse("file: the address holds what looks like a secret (a bot token or an API key); it is neither fetched nor stored")
	}
	r, name, shown, err := m.open(ctx, in, source)
	if err != nil {
		return action.File{}, err
	}
	defer r.Close()
	src := &counted{r: r}
	sum, size, err := m.Store.Put(ctx, src, maxRead)
	switch {
	case err == nil:
	case src.n > maxRead:
		return action.File{}, in.refuse("file %s is larger than %d MB, the most Telegram takes", shown, maxRead>>20)
	case src.err != nil:
		return action.File{}, in.refuse("file %s could not be read: %v", shown, src.err)
	default:
		// The bot could not keep it (a full disk): nothing is wrong with the
		// call, and the surface says what is (journal.IsFull reads ENOSPC).
		return action.File{}, fmt.Errorf("tools: keep file %s: %w", shown, err)
	}
	f := action.File{Kind: kind, Name: name, Size: size, SHA256: sum, Source: shown, MIME: mime.TypeByExtension(strings.ToLower(path.Ext(name)))}
	if kind == action.FilePhoto && size <= verifier.MaxPhotoBytes {
		b, err := m.Store.Open(ctx, sum)
		if err != nil {
			return action.File{}, fmt.Errorf("tools: read back %s: %w", shown, err)
		}
		format, err := photoFormat(b)
		if err != nil {
			return action.File{}, in.refuse("file %s is not a photo Telegram takes (%v): send it as a document", shown, err)
		}
		f.MIME = "image/" + format
	}
	if f.MIME == "" {
		f.MIME = "application/octet-stream"
	}
	return f, nil
}

// counted reads r, counting the bytes and keeping the error that ended it, to
// tell a source that failed from a store that could not keep what it read.
type counted struct {
	r   io.Reader
	n   int64
	err error
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// photoFormat is the format of a photo Telegram takes: a JPEG, PNG or GIF
// whose sides add up to at most 10000 pixels, neither more than 20 times the
// other.
func photoFormat(b []byte) (string, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	switch {
	case err != nil:
		return "", errors.New("not a JPEG, PNG or GIF image")
	case cfg.Width+cfg.Height > 10000:
		return "", fmt.Errorf("%d×%d: width and height add up to more than 10000", cfg.Width, cfg.Height)
	case max(cfg.Width, cfg.Height) > 20*min(cfg.Width, cfg.Height):
		return "", fmt.Errorf("%d×%d: one side is more than 20 times the other", cfg.Width, cfg.Height)
	}
	return format, nil
}

// open opens a source: its bytes, its file name, and how the approver is told
// where it came from.
func (m Media) open(ctx context.Context, in args, source string) (io.ReadCloser, string, string, error) {
	switch {
	case strings.HasPrefix(source, TelegramFile):
		id := strings.TrimPrefix(source, TelegramFile)
		if m.Downloader == nil || id == "" {
			return nil, "", "", in.refuse("file %q: no chat attachment can be read here", source)
		}
		r, name, err := m.Downloader.Download(ctx, id)
		if err != nil {
			return nil, "", "", in.refuse("the attached file could not be read: %v", err)
		}
		if name == "" {
			name = "attachment"
		}
		return r, name, "an attachment in the chat", nil
	case strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://"):
		return m.fetch(ctx, in, source)
	}
	return m.local(in, source)
}

// fetch downloads an address.
func (m Media) fetch(ctx context.Context, in args, source string) (io.ReadCloser, string, string, error) {
	u, err := url.Parse(source)
	if err != nil || u.Host == "" {
		return nil, "", "", in.refuse("file %q is not a valid address", source)
	}
	shown := shownAddress(u)
	client := FetchClient(m.Policy)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", "", in.refuse("file %s: %v", shown, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", "", in.refuse("file %s could not be fetched: %v", shown, unwrapURL(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, "", "", in.refuse("file %s could not be fetched: the server answered %s", shown, resp.Status)
	}
	name := path.Base(resp.Request.URL.Path)
	if name == "/" || name == "." {
		name = resp.Request.URL.Host
	}
	return resp.Body, name, shown, nil
}

// unwrapURL drops the *url.Error wrapping, whose text repeats the address.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// local opens a path under one of the policy's roots, symbolic links resolved
// on both sides, so that a link cannot lead out of a root. The file is then
// opened through the root (os.Root), so that a folder swapped for a link
// between the check and the open cannot lead out of it either; and without
// blocking, so that a FIFO or a device is refused rather than waited on.
func (m Media) local(in args, source string) (io.ReadCloser, string, string, error) {
	if len(m.Policy.Roots) == 0 {
		return nil, "", "", in.refuse("file %q: no folder is open to the file tools (files.roots in policies.yaml); give an http(s) address", source)
	}
	abs, err := filepath.Abs(source)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, "", "", in.refuse("file %q: no such file", source)
	}
	root, rel, ok := m.underRoot(abs)
	if !ok {
		return nil, "", "", in.refuse("file %q is outside the folders open to the file tools (files.roots: %s)", source, strings.Join(m.Policy.Roots, ", "))
	}
	if beforeLocalOpen != nil {
		beforeLocalOpen(abs)
	}
	f, err := openUnder(root, rel)
	if err != nil {
		return nil, "", "", in.refuse("file %q could not be opened: %v", source, errors.Unwrap(err))
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, "", "", in.refuse("file %q is not a regular file", source)
	}
	return f, filepath.Base(abs), abs, nil
}

// beforeLocalOpen, when set (by a test only), runs between the check of a
// path and its open: the moment a folder can be swapped for a link.
var beforeLocalOpen func(abs string)

// openUnder opens rel for reading, confined to root, without blocking on a
// FIFO that has no writer (O_NONBLOCK changes nothing for a regular file).
func openUnder(root, rel string) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close() // the file opened stays open
	return r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// underRoot is the root abs lies under (symbolic links resolved) and its path
// relative to that root. A sibling whose name starts with the root's
// (/a/files2 beside /a/files) is not under it, nor is the root itself.
func (m Media) underRoot(abs string) (root, rel string, ok bool) {
	for _, r := range m.Policy.Roots {
		root, err := filepath.Abs(r)
		if err == nil {
			root, err = filepath.EvalSymlinks(root)
		}
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != "." {
			return root, rel, true
		}
	}
	return "", "", false
}

// attach reads the stored bytes of each file for an upload. A file missing
// from the store, or changed there since it was approved, is never sent: the
// commit is refused with nothing sent.
func (m Media) attach(ctx context.Context, files []action.File) ([]Attachment, error) {
	if m.Store == nil {
		return nil, &RefusedError{Reason: "this process keeps no files: nothing was sent", Err: errors.New("no file store")}
	}
	out := make([]Attachment, len(files))
	for i, f := range files {
		b, err := m.Store.Open(ctx, f.SHA256)
		if err != nil {
			return nil, &RefusedError{Reason: fmt.Sprintf("the approved %s %q is not in the file store as approved: nothing was sent", f.Kind, f.Name), Err: err}
		}
		out[i] = Attachment{File: f, Data: b}
	}
	return out, nil
}

// fileChecks is what the verifier checks of a payload with files.
func fileChecks(p action.Payload) verifier.Input {
	in := verifier.Input{Action: p.Action, Target: p.Target, Text: p.Text, ParseMode: p.ParseMode, Caption: true, NoText: p.Text == ""}
	for _, f := range p.Files {
		in.Files = append(in.Files, verifier.File{Kind: f.Kind, Name: f.Name, Size: f.Size, SHA256: f.SHA256})
	}
	return in
}

// evidenceOf is the evidence of delivered messages.
func evidenceOf(ds []Delivery) action.Evidence {
	var ev action.Evidence
	for _, d := range ds {
		ev.ChatID = d.ChatID
		ev.MessageIDs = append(ev.MessageIDs, d.MessageID)
	}
	return ev
}

// shownAddress is an address as the payload keeps it (and so the journal, the
// card and the vault): its password and the values of its query left out, as
// a pre-signed address carries its signature and credential there; the names
// of the query's parameters stay, for the approver to see what kind of address
// it was. The bytes sent are those read now, named by their hash, so nothing
// needs the address again.
func shownAddress(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		var names []string
		for _, kv := range strings.Split(c.RawQuery, "&") {
			if k, _, _ := strings.Cut(kv, "="); k != "" {
				names = append(names, k+"=…")
			}
		}
		c.RawQuery = strings.Join(names, "&")
	}
	return c.Redacted()
}
