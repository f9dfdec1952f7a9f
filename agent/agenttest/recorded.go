package agenttest

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// recorded holds real responses of the two APIs, copied byte for byte from the
// shared fixtures (see their SOURCES.md): error bodies, and the status lines and
// headers of real responses (*.txt).
//
//go:embed recorded
var recorded embed.FS

func recordedFile(name string) []byte {
	data, err := recorded.ReadFile("recorded/" + name)
	if err != nil {
		panic(err) // embedded: a missing file is a bug in this package
	}
	return data
}

// capture is a recorded status line with its headers and body.
type capture struct {
	status int
	header http.Header
	body   []byte
}

// unmanaged are headers a capture names that this server must not repeat: the
// connection's own (length, date) and ones that mean nothing to a test client.
var unmanaged = []string{"Content-Length", "Connection", "Date", "Set-Cookie"}

// recordedCapture reads a recorded *.txt response.
func recordedCapture(name string) capture {
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(recordedFile(name))), nil)
	if err != nil {
		panic(fmt.Sprintf("agenttest: %s: %v", name, err))
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body) // some captures kept the headers only
	for _, h := range unmanaged {
		res.Header.Del(h)
	}
	return capture{status: res.StatusCode, header: res.Header, body: body}
}

// failureWire is how one API says a Failure: the status, the recorded headers and
// body, and the error object sent as an event inside a stream.
type failureWire struct {
	status int
	header http.Header
	body   []byte
	event  []byte // the data of the error event (Anthropic) or line (OpenAI)
}

// failure is how format says f; a RateLimit asks to wait wait (in milliseconds
// too when ms), or names no wait when wait is 0.
func failure(format string, f Failure, wait time.Duration, ms bool) failureWire {
	var w failureWire
	if format != Anthropic { // the Responses API answers with the same error bodies
		w = openaiFailure(f)
	} else {
		w = anthropicFailure(f, wait)
	}
	if f == RateLimit {
		withRetryAfter(w.header, wait, ms)
	}
	return w
}

// anthropicFailure is the Messages API's answer for f.
func anthropicFailure(f Failure, wait time.Duration) failureWire {
	// Statuses with no recorded headers take the generic ones of the recorded 529,
	// without its x-should-retry: true, which would be a claim nobody recorded.
	generic := recordedCapture("anthropic/http_529_overloaded.txt").header
	generic.Del("X-Should-Retry")
	var w failureWire
	switch f {
	case RateLimit:
		c := recordedCapture("anthropic/http_429_rate_limit_headers.txt")
		if wait <= 0 {
			// A real 429 that named no wait.
			c = recordedCapture("anthropic/http_429_rate_limit_headers_2024_no_retry_after.txt")
		}
		w = failureWire{status: c.status, header: c.header, body: recordedFile("anthropic/error_429_rate_limit_short.json")}
	case Overload:
		c := recordedCapture("anthropic/http_529_overloaded.txt")
		w = failureWire{status: c.status, header: c.header, body: c.body}
	case ServerError:
		w = failureWire{status: http.StatusInternalServerError, header: generic, body: recordedFile("anthropic/error_500_api_error.json")}
	case AuthError:
		w = failureWire{status: http.StatusUnauthorized, header: generic, body: recordedFile("anthropic/error_401_authentication.json")}
	case PromptTooLong:
		w = failureWire{status: http.StatusBadRequest, header: generic, body: recordedFile("anthropic/error_400_prompt_too_long.json")}
	default:
		panic(fmt.Sprintf("agenttest: unknown failure %d", f))
	}
	// The Go SDK reads the request id from the header; keep it the body's.
	var b struct {
		RequestID *string `json:"request_id"`
	}
	if json.Unmarshal(w.body, &b) == nil && b.RequestID != nil {
		w.header.Set("Request-Id", *b.RequestID)
	}
	if f == Overload {
		// The recorded event of a real stream that failed with an overload.
		w.event = recordedEventData(recordedFile("anthropic/stream_error_overloaded_only.sse"))
	} else {
		w.event = compact(w.body)
	}
	return w
}

// openaiUnauthorized is a 401 of the OpenAI API. No fixture holds one: it has the
// shape captured in public reports (type invalid_request_error, code
// invalid_api_key), with a made-up masked key.
const openaiUnauthorized = `{"error":{"message":"Incorrect API key provided: sk-test*****************0042. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`

// openaiFailure is an OpenAI-compatible server's answer for f, with the headers
// of the one recorded OpenAI error response (a 429 that carried no retry-after).
func openaiFailure(f Failure) failureWire {
	c := recordedCapture("openai/http_429_headers_responses_api.txt")
	w := failureWire{header: c.header}
	switch f {
	case RateLimit:
		w.status, w.body = http.StatusTooManyRequests, recordedFile("openai/error_429_rate_limit_exceeded_rpm.json")
	case Overload:
		w.status, w.body = http.StatusServiceUnavailable, recordedFile("openai/error_503_server_is_overloaded.json")
	case ServerError:
		w.status, w.body = http.StatusInternalServerError, recordedFile("openai/error_500_server_error.json")
	case AuthError:
		w.status, w.body = http.StatusUnauthorized, []byte(openaiUnauthorized)
	case PromptTooLong:
		w.status, w.body = http.StatusBadRequest, recordedFile("openai/error_400_context_length_exceeded.json")
	default:
		panic(fmt.Sprintf("agenttest: unknown failure %d", f))
	}
	// Inside a stream, an OpenAI-compatible server sends the same error object
	// as a data line (no recorded stream holds one; see fixtures/NOTES.md §3).
	w.event = compact(w.body)
	return w
}

// withRetryAfter sets how long the answer asks to wait: retry-after in seconds,
// and retry-after-ms when ms is set; d == 0 removes both.
func withRetryAfter(h http.Header, d time.Duration, ms bool) {
	h.Del("Retry-After")
	h.Del("Retry-After-Ms")
	if d <= 0 {
		return
	}
	h.Set("Retry-After", strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
	if ms {
		h.Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
	}
}

// recordedEventData is the data of the first event of a recorded stream.
func recordedEventData(stream []byte) []byte {
	for line := range bytes.SplitSeq(stream, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			return d
		}
	}
	panic("agenttest: a recorded stream without data")
}

func compact(body []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		return body
	}
	return b.Bytes()
}
