package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
)

// Limits of what is kept of an answer: the bytes read of it, and the excerpt
// of it an error or the evidence carries (after redaction).
const (
	maxAnswerRead  = 1 << 20
	maxAnswerKept  = 2 << 10
	maxRefKept     = 200
	maxRedirects   = 3
	idempotencyKey = "Idempotency-Key"
)

// newHTTPClient is the client of a declared tool: bounded by timeout, answer
// included; never retrying on its own (no connection is reused, so Go's
// transport has no idle connection to retry a request on); following a
// redirect only to the same scheme and host, at most maxRedirects times.
func newHTTPClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Timeout: timeout, Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if len(via) > maxRedirects || req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return http.ErrUseLastResponse // the redirect itself is the answer (see status)
		}
		return nil
	}}
}

// answer is what the service said.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// Commit implements Committer: it makes the approved request and reads the
// service's answer into the contract's errors. Nothing written: ErrNotSent;
// 429, or 503 with Retry-After: *RetryAfterError; 400, 413 and 422 (the
// request is wrong): *RepairError; any other 4xx (credentials, rights, not
// found, conflict): *RefusedError; a redirect elsewhere by 307 or 308 (the
// request was not applied here): *RefusedError; a timeout or a lost
// connection after the request was written, a 5xx, any other redirect or a
// status the declaration does not call success: ErrOutcomeUnknown. Texts are
// redacted and cut.
func (t *HTTPTool) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	r := p.Request
	if r == nil {
		return action.Evidence{}, &RefusedError{Reason: "the payload holds no HTTP request", Err: ErrNotSent}
	}
	key := ""
	if r.IdempotencyKey {
		if key = OperationOf(ctx); key == "" {
			return action.Evidence{}, &RefusedError{Reason: "no operation id to send as Idempotency-Key", Err: ErrNotSent}
		}
	}
	a, err := t.do(ctx, r.Method, r.URL, r.Headers, r.Body, key, true)
	if err != nil {
		return action.Evidence{}, err
	}
	if t.decl.Succeeded(a.status) {
		return t.evidence(a), nil
	}
	return action.Evidence{}, t.refusal(r.URL, a)
}

// Landed implements StateReader: a GET of the reconcile URL says whether the
// effect exists (2xx, with the evidence read from its answer) or not (404);
// any other answer, or none, is an error: the outcome stays unknown.
func (t reconciledHTTPTool) Landed(ctx context.Context, p action.Payload) (action.Evidence, bool, error) {
	r := p.Request
	if r == nil || r.Reconcile == "" {
		return action.Evidence{}, false, errors.New("the payload has no reconcile read")
	}
	u := r.Reconcile
	if strings.Contains(u, "{"+policy.OperationIDPlaceholder+"}") {
		id := OperationOf(ctx)
		if id == "" {
			return action.Evidence{}, false, errors.New("no operation id to look the effect up by")
		}
		u = strings.ReplaceAll(u, "{"+policy.OperationIDPlaceholder+"}", url.PathEscape(id))
	}
	a, err := t.do(ctx, http.MethodGet, u, r.Headers, "", "", false)
	switch {
	case err != nil:
		return action.Evidence{}, false, err
	case a.status >= 200 && a.status < 300:
		return t.evidence(a), true, nil
	case a.status == http.StatusNotFound:
		return action.Evidence{}, false, nil
	}
	return action.Evidence{}, false, fmt.Errorf("reconcile: HTTP %d from %s: %s", a.status, hostOf(u), t.excerpt(a.body))
}

// do makes one request and reads its answer. fenced requests check the
// operation's fence right before they are written. Its errors are ErrNotSent
// (nothing written, or a header secret missing), ErrOutcomeUnknown (written,
// no answer) and ErrFenced.
func (t *HTTPTool) do(ctx context.Context, method, raw string, headers []action.HTTPHeader, body, key string, fenced bool) (answer, error) {
	host := hostOf(raw)
	u, err := url.Parse(raw)
	if err != nil || !t.decl.AllowsHost(host) || u.Scheme != "https" && !(u.Scheme == "http" && policy.IsLoopback(host)) {
		return answer{}, &RefusedError{Reason: fmt.Sprintf("the address %s is not one the declaration allows (hosts %q, https)", t.redact(raw), t.decl.Hosts), Err: ErrNotSent}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, raw, rd)
	if err != nil {
		return answer{}, &RefusedError{Reason: "the request cannot be built: " + t.redact(err.Error()), Err: ErrNotSent}
	}
	if err := t.setHeaders(req, headers); err != nil {
		return answer{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(idempotencyKey, key)
	}
	req.Header.Set("User-Agent", "countersign")
	if fenced {
		if err := action.CheckFence(ctx); err != nil {
			return answer{}, err
		}
	}
	wrote := new(atomic.Bool)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				wrote.Store(true)
			}
		},
	}))
	resp, err := t.client.Do(req)
	if err != nil {
		why := errors.New(t.redact(err.Error()))
		if !wrote.Load() {
			return answer{}, fmt.Errorf("%s %s: %w: %w", method, host, why, ErrNotSent)
		}
		return answer{}, fmt.Errorf("%s %s: no answer after the request was written: %w: %w", method, host, why, ErrOutcomeUnknown)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerRead)) // a cut answer still has its status
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// setHeaders sets the declared headers, reading each secret from the
// environment now. A variable the declaration does not name is not read, and
// one that is empty sends nothing.
func (t *HTTPTool) setHeaders(req *http.Request, headers []action.HTTPHeader) error {
	for _, h := range headers {
		if h.Env == "" {
			req.Header.Set(h.Name, h.Value)
			continue
		}
		if d, ok := t.decl.Headers[h.Name]; !ok || d.Env != h.Env {
			return &RefusedError{Reason: fmt.Sprintf("header %s from $%s is not declared any more", h.Name, h.Env), Err: ErrNotSent}
		}
		v := t.env(h.Env)
		if v == "" {
			return &RefusedError{Reason: fmt.Sprintf("environment variable %s is not set; nothing was sent", h.Env), Err: ErrNotSent}
		}
		req.Header.Set(h.Name, h.Prefix+v)
	}
	return nil
}

// refusal reads a status that is not a success into the contract's errors.
func (t *HTTPTool) refusal(raw string, a answer) error {
	what := fmt.Errorf("HTTP %d from %s: %s", a.status, hostOf(raw), t.excerpt(a.body))
	after, hasAfter := retryAfter(a.header.Get("Retry-After"), time.Now())
	switch s := a.status; {
	case s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable && hasAfter || s == http.StatusRequestTimeout:
		return &RetryAfterError{After: after, Err: errors.Join(what, ErrNotSent)}
	case s == http.StatusTemporaryRedirect || s == http.StatusPermanentRedirect:
		return &RefusedError{Reason: "the service redirected the request to " + t.redact(hostOf(a.header.Get("Location"))) +
			", which is not followed (a 307/308 means it was not applied here)", Err: what}
	case s == http.StatusBadRequest || s == http.StatusRequestEntityTooLarge || s == http.StatusUnprocessableEntity:
		return &RepairError{Reason: fmt.Sprintf("the service refused the request as malformed (HTTP %d)", s), Err: what}
	case s >= 400 && s < 500:
		return &RefusedError{Reason: fmt.Sprintf("the service refused the request (HTTP %d %s)", s, http.StatusText(s)), Err: what}
	}
	return fmt.Errorf("%w: %w", what, ErrOutcomeUnknown)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// evidence is a success as the contract records it: the status, and the
// value at the declared pointer in the answer, redacted and cut.
func (t *HTTPTool) evidence(a answer) action.Evidence {
	ev := action.Evidence{HTTPStatus: a.status}
	if t.decl.Evidence == "" {
		return ev
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return ev
	}
	v, ok := pointer(doc, t.decl.Evidence)
	if !ok {
		return ev
	}
	ref, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		ref = string(b)
	}
	ev.Ref = excerpt(t.redact(ref), maxRefKept)
	return ev
}

// pointer resolves a JSON pointer (RFC 6901) in a decoded document.
func pointer(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := doc.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || tok != strconv.Itoa(i) {
				return nil, false
			}
			doc = c[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// excerpt is an answer's body as an error keeps it: redacted, then cut.
func (t *HTTPTool) excerpt(b []byte) string {
	s := strings.TrimSpace(t.redact(string(b)))
	if len(s) > maxAnswerKept {
		s = strings.ToValidUTF8(s[:maxAnswerKept], "") + "… (cut)"
	}
	if s == "" {
		return "(empty answer)"
	}
	return s
}

// redact withholds, in s, the values of the declared headers' variables in
// every spelling (secret.Known), and whatever looks like a secret.
func (t *HTTPTool) redact(s string) string {
	for _, h := range t.decl.Headers {
		if h.Env != "" {
			s = secret.NewKnown(t.env(h.Env)).Redact(s)
		}
	}
	s, _ = secret.Redact(s)
	return s
}
