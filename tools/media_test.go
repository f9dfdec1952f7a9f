package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// fileTools is a registry offering the photo and document tools over a real
// store, with files under roots open to them.
func fileTools(t *testing.T, files policy.Files) (photo, document tools.Reader) {
	t.Helper()
	p := parse(t, "tools:\n  commit_send_photo:\n    side_effect: committed\n    approval: required\n  commit_send_document:\n    side_effect: committed\n    approval: required\n")
	p.Files = files
	store, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := tools.NewRegistry(p, nil, tools.WithFiles(store))
	if err != nil {
		t.Fatal(err)
	}
	ph, _ := r.Get("commit_send_photo")
	doc, _ := r.Get("commit_send_document")
	return ph.(tools.Reader), doc.(tools.Reader)
}

func pngBytes(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func prepareFile(t *testing.T, r tools.Reader, file, caption string) (action.Payload, error) {
	raw, _ := json.Marshal(map[string]string{"chat_id": "222", "file": file, "caption": caption})
	return r.PrepareFrom(t.Context(), raw, nil)
}

// The file tools read only what the policy opens to them: a path under a root
// (not one a symbolic link leads out of), an address on a public host unless
// files.fetch_private allows others, and for a photo an image Telegram takes.
func TestFileToolsReadOnlyWhatThePolicyOpens(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(dir, name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	img := pngBytes(t, 30, 20)
	inside := write(root, "chart.png", img)
	secret := write(outside, "id_rsa", []byte("private key"))
	link := filepath.Join(root, "escape")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	text := write(root, "notes.txt", []byte("not a photo"))
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	tall := write(root, "tall.png", pngBytes(t, 10, 300))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) }))
	defer web.Close()

	photo, document := fileTools(t, policy.Files{Roots: []string{root}})
	p, err := prepareFile(t, photo, inside, "hi")
	if err != nil {
		t.Fatalf("a photo under a root: %v", err)
	}
	if f := p.Files[0]; f.Kind != action.FilePhoto || f.Name != "chart.png" || f.Size != int64(len(img)) || f.MIME != "image/png" {
		t.Errorf("file = %+v", f)
	}
	refusals := []struct {
		name   string
		tool   tools.Reader
		file   string
		reason string
	}{
		{"outside every root", document, secret, "outside the folders open"},
		{"a link out of the root", document, link, "outside the folders open"},
		{"no such file", document, filepath.Join(root, "missing.pdf"), "no such file"},
		{"a folder", document, sub, "not a regular file"},
		{"not an image", photo, text, "not a photo Telegram takes"},
		{"too narrow", photo, tall, "more than 20 times"},
		{"a loopback address", photo, web.URL + "/chart.png", "private address"},
		{"another scheme", document, "ftp://example.org/x", "no such file"},
		{"a token in the address", document, "https://api.telegram.org/file/bot7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/a.pdf", "looks like a secret"},
	}
	for _, tt := range refusals {
		_, err := prepareFile(t, tt.tool, tt.file, "")
		var ae *tools.ArgsError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: %v, want a refusal saying %q", tt.name, err, tt.reason)
		}
	}

	photo, _ = fileTools(t, policy.Files{FetchPrivate: true})
	if _, err := prepareFile(t, photo, web.URL+"/chart.png", ""); err != nil {
		t.Errorf("a loopback address with fetch_private: %v", err)
	}
	if _, err := prepareFile(t, photo, inside, ""); err == nil || !strings.Contains(err.Error(), "files.roots") {
		t.Errorf("a path with no roots: %v, want a refusal naming files.roots", err)
	}
}

// Two payloads differing only in a file's bytes have different hashes: the
// approval of one can never send the other.
func TestAPayloadsHashCoversItsFilesContent(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a.png")
	photo, _ := fileTools(t, policy.Files{Roots: []string{root}})
	var hashes []string
	for _, size := range []int{10, 11} {
		if err := os.WriteFile(path, pngBytes(t, size, size), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := prepareFile(t, photo, path, "same caption")
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, p.SHA256())
	}
	if hashes[0] == hashes[1] {
		t.Error("the same path with other bytes gives the same payload hash")
	}
}

// An album's captions are held to Telegram's limit each, not together, and
// are its text for the checks that compare texts.
func TestAnAlbumsCaptionsAreCheckedEachAgainstTheLimit(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a.png", "b.png"} {
		if err := os.WriteFile(filepath.Join(root, n), pngBytes(t, 10, 10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := parse(t, "tools:\n  commit_send_album:\n    side_effect: committed\n    approval: required\n")
	p.Files = policy.Files{Roots: []string{root}}
	store, _ := filestore.Open(t.TempDir())
	r, err := tools.NewRegistry(p, nil, tools.WithFiles(store))
	if err != nil {
		t.Fatal(err)
	}
	album, _ := r.Get("commit_send_album")
	check := func(a, b string) verifier.Verdict {
		raw, _ := json.Marshal(map[string]any{"chat_id": "222", "files": []map[string]string{
			{"file": filepath.Join(root, "a.png"), "caption": a}, {"file": filepath.Join(root, "b.png"), "caption": b}}})
		pl, err := album.(tools.Reader).PrepareFrom(t.Context(), raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return verifier.New(policy.Verify{}, nil, nil).Check(t.Context(), tools.CheckOf(album, pl))
	}
	words := func(n int) string { return strings.Repeat("ab ", n/3) }
	if v := check(words(900), words(900)); v.Decision != verifier.Pass {
		t.Errorf("two captions of 900: %s, want pass", v.Summary())
	}
	if v := check(words(1100), "short"); v.Decision != verifier.Repair || !strings.Contains(v.Summary(), "Telegram takes at most 1024") {
		t.Errorf("a caption of 1100: %s, want a repair", v.Summary())
	}
}

// fullStore is a file store on a full disk: it reads what it is given to its
// end, and cannot keep it. (A real full disk needs a tmpfs and root; the
// chaos run has one.)
type fullStore struct{}

func (fullStore) Put(_ context.Context, r io.Reader, _ int64) (string, int64, error) {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return "", 0, err
	}
	return "", 0, fmt.Errorf("filestore: write: %w", &os.PathError{Op: "write", Path: "files/.put-1", Err: syscall.ENOSPC})
}
func (fullStore) Open(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist }

// A file the bot cannot keep (its disk is full) is not a wrong argument: the
// error is the disk's, for the surface to say so and the caller to wait, not
// a repair asked of the caller.
func TestAFileTheBotCannotKeepIsNotTheCallersToRepair(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "a.png")
	if err := os.WriteFile(path, pngBytes(t, 10, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	p := parse(t, "tools:\n  commit_send_photo:\n    side_effect: committed\n    approval: required\n")
	p.Files = policy.Files{Roots: []string{root}}
	r, err := tools.NewRegistry(p, nil, tools.WithFiles(fullStore{}))
	if err != nil {
		t.Fatal(err)
	}
	photo, _ := r.Get("commit_send_photo")
	_, err = prepareFile(t, photo.(tools.Reader), path, "")
	var ae *tools.ArgsError
	if err == nil || errors.As(err, &ae) || !journal.IsFull(err) {
		t.Errorf("a full disk: %v, want an error the journal reads as a full disk, not a refusal", err)
	}
}

// A pre-signed address carries its signature in the query: the payload keeps
// the names of the query's parameters and none of their values, nor a
// password, so neither reaches the journal, a card or the vault; the bytes
// are fetched with the whole address.
func TestAFilesAddressIsKeptWithoutItsSecrets(t *testing.T) {
	img := pngBytes(t, 4, 4)
	var asked string
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.URL.RawQuery
		_, _ = w.Write(img)
	}))
	defer web.Close()
	photo, _ := fileTools(t, policy.Files{FetchPrivate: true})
	addr := strings.Replace(web.URL, "http://", "http://user:pw0rd@", 1) + "/chart.png?X-Amz-Signature=c0ffee5ign&X-Amz-Expires=60#frag"
	p, err := prepareFile(t, photo, addr, "")
	if err != nil {
		t.Fatal(err)
	}
	if asked != "X-Amz-Signature=c0ffee5ign&X-Amz-Expires=60" {
		t.Errorf("fetched with query %q, want the whole address", asked)
	}
	b, _ := json.Marshal(p)
	for _, secret := range []string{"c0ffee5ign", "pw0rd", "frag"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("payload keeps %q: %s", secret, b)
		}
	}
	if got := p.Files[0].Source; !strings.HasSuffix(got, "/chart.png?X-Amz-Signature=…&X-Amz-Expires=…") {
		t.Errorf("source = %q, want the parameters' names only", got)
	}
}
