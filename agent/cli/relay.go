package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/model"
)

// relay stands between a CLI and its model service for one attempt, on
// loopback: it passes every request (each whole, see wholeBody) and answer
// through as they are, streams included, and keeps the wait the service asked
// for in its last answer that failed in a way waiting may cure
// (retry-after-ms, retry-after).
//
// It exists because the CLIs, run with their own retries off as the
// coordinator needs, drop that wait: Claude Code says only "API Error: Request
// rejected (429) · <message>", Codex "exceeded retry limit, last status: 429"
// (agent/cli/testdata). The answers' headers are the one place the wait is
// told, so the coordinator reads them here, as agent.Recovery reads them for
// the SDKs. The relay adds nothing to a request: the CLI's own credentials
// pass through it, and it keeps none of them.
type relay struct {
	base string // the relay's URL with the service's path: the CLI's base URL
	srv  *http.Server
	now  func() time.Time

	mu    sync.Mutex
	wait  time.Duration
	named bool
	// limit, when above 0, is how many model requests the attempt may make;
	// the next one is not passed on, and over is called (see bound).
	limit, requests int
	over            func()
}

// startRelay starts a relay to the service at upstream (a base URL: scheme,
// host, and the path the CLI appends to). env is the CLI's environment, whose
// NODE_EXTRA_CA_CERTS the relay trusts as the CLI would.
func startRelay(upstream string, env []string, now func() time.Time) (*relay, error) {
	target, err := url.Parse(upstream)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return nil, fmt.Errorf("the model service %q is not an http(s) URL", upstream)
	}
	transport, err := relayTransport(env)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the relay to the model service: %w", err)
	}
	r := &relay{now: now}
	r.base = (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: target.Path}).String()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The relay's base has the service's path, so the CLI asks the
			// service's paths: they are kept, and only the scheme and host
			// (the Host header with them) become the service's.
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = target.Scheme, target.Host, ""
		},
		Transport:      transport,
		FlushInterval:  -1, // a stream's events as they come: the stall watch reads them
		ModifyResponse: func(resp *http.Response) error { r.observe(resp); return nil },
		// A service that could not be reached leaves the CLI with no answer,
		// as it would have without the relay (not a 502 of the relay's).
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
		ErrorLog:     log.New(io.Discard, "", 0),
	}
	r.srv = &http.Server{Handler: r.counted(wholeBody(proxy)), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go r.srv.Serve(ln)
	return r, nil
}

// bound limits the attempt to n model requests (a CLI's POSTs: each is one
// model turn); the request past them is not passed on, the CLI gets no
// answer, and over is called, once, to end the run. n <= 0 bounds nothing.
// It is set before the CLI starts.
func (r *relay) bound(n int, over func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limit, r.over = n, sync.OnceFunc(over)
}

// counted is next behind the turn bound.
func (r *relay) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost {
			r.mu.Lock()
			r.requests++
			past := r.limit > 0 && r.requests > r.limit
			over := r.over
			r.mu.Unlock()
			if past {
				over()
				panic(http.ErrAbortHandler)
			}
		}
		next.ServeHTTP(w, req)
	})
}

// maxRequest bounds a model request's body the relay holds: a whole
// conversation, its tool results included, is far below it.
const maxRequest = 64 << 20

// wholeBody reads a request's body whole before next passes it on. Passed on
// as it arrives, a body the service answered before it had read to its end
// breaks the answer: once the relay flushes the answer's headers to the CLI,
// the server refuses further reads of the CLI's body, the transport's write of
// it fails, and the transport closes the connection the answer is streaming
// on ("use of closed network connection"; the CLI sees its stream break). A
// service reads a request whole before it answers, but the transport's last
// read of the body, the one that finds its end, comes after the last bytes it
// sent, and races the answer.
func wholeBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRequest))
		if err != nil {
			panic(http.ErrAbortHandler) // the CLI's request broke off: no answer, as without the relay
		}
		req.Body, req.ContentLength, req.TransferEncoding = io.NopCloser(bytes.NewReader(body)), int64(len(body)), nil
		next.ServeHTTP(w, req)
	})
}

// relayTransport is how the relay reaches the service: the default transport
// (the environment's proxy, as the CLI would use it), trusting the extra
// certificates the CLI's NODE_EXTRA_CA_CERTS names.
func relayTransport(env []string) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	extra := envValue(env, "NODE_EXTRA_CA_CERTS")
	if extra == "" {
		return t, nil
	}
	pem, err := os.ReadFile(extra)
	if err != nil {
		return nil, fmt.Errorf("NODE_EXTRA_CA_CERTS: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("NODE_EXTRA_CA_CERTS: %s holds no PEM certificate", extra)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	return t, nil
}

// observe keeps the wait of a failed answer that waiting may cure; any other
// answer clears it: the last answer is the one the CLI failed on.
func (r *relay) observe(resp *http.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wait, r.named = 0, false
	if retryable, _ := model.RetryableStatus(resp.StatusCode); retryable {
		r.wait, r.named = model.WaitAsked(resp.Header, r.now())
	}
}

// asked is the wait the service asked for in its last answer, if it failed
// and named one; a nil relay (none stood in front of the CLI) knows none.
func (r *relay) asked() (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wait, r.named
}

// URL is the base URL the CLI is to use for its model service.
func (r *relay) URL() string { return r.base }

// Close stops the relay, cutting any exchange still open (the attempt has
// ended: its process is gone).
func (r *relay) Close() { r.srv.Close() }

// envValue is KEY's value in env (KEY=VALUE each; the last one wins), "" when
// unset.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
