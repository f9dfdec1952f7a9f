// Package chromium drives a headless Chromium over the DevTools protocol, so that
// a test sees a page the project serves as a person's browser draws it: it loads
// the page, types with the keyboard, clicks where an element is drawn, and waits
// for what the page shows, with no sleep. The browser is Debian's chromium
// (COUNTERSIGN_CHROMIUM names another); a test without one is skipped, or fails
// when COUNTERSIGN_REQUIRE_CHROMIUM=1 (CI), so that a missing browser never
// passes for a green run.
package chromium

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/countersign/countersign/internal/skips"
)

// ErrNotFound is returned by Find when no Chromium is installed.
var ErrNotFound = errors.New("chromium: no browser found (apt-get install chromium, or set COUNTERSIGN_CHROMIUM)")

// names are the binaries Find looks for on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the browser to run: COUNTERSIGN_CHROMIUM when set, else the first
// of names on PATH. It returns ErrNotFound when there is none.
func Find() (string, error) {
	if p := os.Getenv("COUNTERSIGN_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// ForTest starts a browser closed when tb ends. It skips tb (fails it under
// COUNTERSIGN_REQUIRE_CHROMIUM=1) when none is installed, and fails it when the
// one installed does not start.
func ForTest(tb testing.TB) *Browser {
	tb.Helper()
	path, err := Find()
	if err != nil {
		if os.Getenv("COUNTERSIGN_REQUIRE_CHROMIUM") == "1" {
			tb.Fatal(err.Error() + " (COUNTERSIGN_REQUIRE_CHROMIUM=1)")
		}
		tb.Skip(skips.Need("Chromium (COUNTERSIGN_CHROMIUM)", err.Error())) // counted by go run ./internal/testrun
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Start(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// Browser is a running headless Chromium and the DevTools connection to it.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	conn    *websocket.Conn
	done    chan struct{} // closed when the connection ends
	stderr  *tail

	mu      sync.Mutex
	next    int64
	waiting map[int64]chan message
	events  map[event]chan struct{} // one-shot waits for an event (see await)
	err     error                   // why the connection ended
}

// event is an event's method in a session.
type event struct{ session, method string }

// message is one DevTools protocol message: a reply (ID set) or an event.
type message struct {
	ID     int64           `json:"id,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	Method    string `json:"method,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
}

// Start runs the browser at path headless, with a profile of its own, and
// connects to it. ctx bounds the start only.
func Start(ctx context.Context, path string) (*Browser, error) {
	profile, err := os.MkdirTemp("", "countersign-chromium-")
	if err != nil {
		return nil, fmt.Errorf("chromium: profile: %w", err)
	}
	args := []string{"--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--remote-debugging-port=0", "--user-data-dir=" + profile, "--window-size=1280,900"}
	if os.Geteuid() == 0 { // Chromium refuses its sandbox to root, as CI runs
		args = append(args, "--no-sandbox")
	}
	b := &Browser{cmd: exec.Command(path, append(args, "about:blank")...), profile: profile,
		done: make(chan struct{}), waiting: map[int64]chan message{}, events: map[event]chan struct{}{}, stderr: &tail{}}
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("chromium: %w", err)
	}
	if err := b.cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("chromium: start %s: %w", path, err)
	}
	endpoint, err := b.endpoint(ctx, stderr)
	if err == nil {
		b.conn, _, err = websocket.Dial(ctx, endpoint, nil)
	}
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("chromium: %w; its last words: %s", err, b.stderr)
	}
	b.conn.SetReadLimit(64 << 20) // a screenshot comes in one message
	go b.read()
	return b, nil
}

// endpoint reads the browser's stderr until it names its DevTools endpoint, and
// keeps the rest of it for errors.
func (b *Browser) endpoint(ctx context.Context, stderr io.Reader) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.stderr.add(line)
			if _, url, ok := strings.Cut(line, "DevTools listening on "); ok {
				select {
				case found <- strings.TrimSpace(url):
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case url, ok := <-found:
		if !ok {
			return "", errors.New("the browser ended before it listened")
		}
		return url, nil
	case <-ctx.Done():
		return "", fmt.Errorf("no DevTools endpoint: %w", ctx.Err())
	}
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() error {
	if b.conn != nil {
		b.conn.Close(websocket.StatusNormalClosure, "")
	}
	b.cmd.Process.Kill()
	b.cmd.Wait()
	return os.RemoveAll(b.profile)
}

// read hands each reply to its caller, and each awaited event to its waiter,
// until the connection ends.
func (b *Browser) read() {
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
			close(b.done)
			return
		}
		var m message
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.ID == 0 {
			b.fire(event{m.SessionID, m.Method})
			continue
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// await returns a channel closed at the next event method in session.
func (b *Browser) await(session, method string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := event{session, method}
	if b.events[e] == nil {
		b.events[e] = make(chan struct{})
	}
	return b.events[e]
}

func (b *Browser) fire(e event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch := b.events[e]; ch != nil {
		close(ch)
		delete(b.events, e)
	}
}

// call sends method with params in session ("" for the browser) and decodes
// the reply's result into result (unless nil).
func (b *Browser) call(ctx context.Context, session, method string, params, result any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan message, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.waiting, id)
		b.mu.Unlock()
	}()
	req, err := json.Marshal(struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{id, method, params, session})
	if err != nil {
		return fmt.Errorf("chromium: %s: %w", method, err)
	}
	if err := b.conn.Write(ctx, websocket.MessageText, req); err != nil {
		return fmt.Errorf("chromium: %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("chromium: %s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("chromium: %s: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("chromium: %s: %w", method, ctx.Err())
	case <-b.done:
		b.mu.Lock()
		defer b.mu.Unlock()
		return fmt.Errorf("chromium: %s: the browser went away: %w", method, b.err)
	}
}

// Open opens url in a new tab and returns once it has loaded.
func (b *Browser) Open(ctx context.Context, url string) (*Page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, session: attached.SessionID}
	if err := b.call(ctx, p.session, "Page.enable", nil, nil); err != nil {
		return nil, err
	}
	if err := p.Navigate(ctx, url); err != nil {
		return nil, err
	}
	return p, nil
}

// Navigate loads url in the page and returns once it has loaded. What the
// tab holds stays with it (a virtual authenticator, say), as it does when a
// person follows a link.
func (p *Page) Navigate(ctx context.Context, url string) error {
	b := p.b
	loaded := b.await(p.session, "Page.loadEventFired")
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("chromium: open %s: %s", url, nav.ErrorText)
	}
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("chromium: open %s: not loaded: %w", url, ctx.Err())
	case <-b.done:
		return fmt.Errorf("chromium: open %s: the browser went away", url)
	}
}

// tail keeps the last lines a browser wrote to its stderr.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 20 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// decodeImage is base64 as the protocol sends binary data.
func decodeImage(data string) ([]byte, error) { return base64.StdEncoding.DecodeString(data) }
