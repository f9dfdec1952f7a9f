package agenttest

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"
)

// Reply is one scripted answer, written once and rendered in the format of the
// request it answers. Build it with Message, Fail, RateLimited or File, and make
// its delivery go wrong with StallAfter, HangFor, CutAfter, DropAfter, FailAfter,
// Pace or IgnoreStream.
type Reply struct {
	// Status and Body are a recorded answer. A Body with a status other than 200
	// is an error body, served as it is. With status 200 it is either an event
	// stream (*.sse), served as it is, or a message of either API: served as it is
	// to a plain request in its own format, translated for the other format, and
	// as a stream built from it when the request streams.
	Status int
	Body   []byte
	// Header is added to the response's headers.
	Header http.Header

	msg     *message
	fail    Failure       // the answer is this failure when not 0
	wait    time.Duration // the wait a RateLimit names
	waitMs  bool
	trouble trouble
}

// Failure is an error a model service answers with, said by each API in its own
// words (status, headers and body as recorded from the real services).
type Failure int

// The failures a Reply can stand for.
const (
	// RateLimit is a 429: Anthropic's rate_limit_error with x-should-retry,
	// OpenAI's rate_limit_exceeded.
	RateLimit Failure = iota + 1
	// Overload is Anthropic's 529 overloaded_error (x-should-retry: true), or an
	// OpenAI-compatible server's (and the Responses API's) 503
	// server_is_overloaded, which Codex reports as server_overloaded.
	Overload
	// ServerError is a 500: Anthropic's api_error, OpenAI's server_error.
	ServerError
	// AuthError is a 401: Anthropic's authentication_error, OpenAI's
	// invalid_api_key.
	AuthError
	// PromptTooLong is a 400: Anthropic's invalid_request_error "prompt is too
	// long: 219898 tokens > 200000 maximum", OpenAI's context_length_exceeded.
	PromptTooLong
)

// Use is one tool call in a scripted message: the tool's name and its input object.
type Use struct {
	Name  string
	Input string
	id    string // a recorded call's id
}

// Call is a Use of the tool name with input.
func Call(name, input string) Use { return Use{Name: name, Input: input} }

// Send is a Use of commit_send_message with its arguments.
func Send(chatID, text string) Use {
	in, err := json.Marshal(map[string]string{"chat_id": chatID, "text": text})
	if err != nil {
		panic(err)
	}
	return Call("commit_send_message", string(in))
}

// Message is a reply with text (omitted when empty) and tool calls, stopped for
// stop, in Anthropic's words ("end_turn", "tool_use", "max_tokens", "refusal");
// an OpenAI-compatible request gets the finish reason that means the same ("stop",
// "tool_calls", "length", "content_filter"). The model named is the request's.
// Streamed and cut at max_tokens, the last tool call's input is cut in half and
// never closed, as the services do.
func Message(stop, text string, uses ...Use) Reply {
	return Reply{Status: http.StatusOK, msg: &message{stop: stop, text: text, uses: uses}}
}

// Fail is the reply of a service failing with f before any body.
func Fail(f Failure) Reply {
	return Reply{fail: f}
}

// RateLimited is a 429 whose retry-after asks to wait d (in seconds, fractional
// when d is); 0 names no wait, as some real 429s do.
func RateLimited(d time.Duration) Reply {
	r := Fail(RateLimit)
	r.wait = d
	return r
}

// RateLimitedMs is a 429 that asks to wait d with retry-after-ms, and with
// retry-after in whole seconds, rounded up, beside it.
func RateLimitedMs(d time.Duration) Reply {
	r := RateLimited(d)
	r.waitMs = true
	return r
}

// File is the reply whose body is the file at path, with status (see Reply).
func File(t testing.TB, path string, status int) Reply {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{Status: status, Body: body}
}

// trouble is how the delivery of a reply goes wrong.
type trouble struct {
	hang  point // before the headers, for hangFor
	stall point // after some events, for stallFor, with pings
	cut   point // the body ends cleanly
	drop  point // the connection is closed
	fail  point // an error event, then the end
	pace  time.Duration
	plain bool

	hangFor, stallFor, pings time.Duration
	failWith                 Failure
}

// point is where in the body (after how many events) a trouble happens.
type point struct {
	on    bool
	after int
}

// HangFor holds the request for d before any header is sent (0: until the client
// gives up), then answers with r.
func (r Reply) HangFor(d time.Duration) Reply {
	r.trouble.hang, r.trouble.hangFor = point{on: true}, d
	return r
}

// StallAfter sends the headers and the first events of r, then nothing for d (0:
// until the client gives up), then the rest. A reply that does not stream stalls
// halfway through its body.
func (r Reply) StallAfter(events int, d time.Duration) Reply {
	r.trouble.stall, r.trouble.stallFor = point{on: true, after: events}, d
	return r
}

// WithPings has a stalled stream send a ping every d while it stalls: an event
// "ping" (Anthropic), an SSE comment ": ping" (OpenAI-compatible servers, the
// Responses API).
func (r Reply) WithPings(d time.Duration) Reply {
	r.trouble.pings = d
	return r
}

// CutAfter ends the body cleanly after the first events of r: a stream that stops
// before its end. A reply that does not stream is cut halfway.
func (r Reply) CutAfter(events int) Reply {
	r.trouble.cut = point{on: true, after: events}
	return r
}

// DropAfter closes the connection after the first events of r, in the middle of
// the body. A reply that does not stream is dropped halfway.
func (r Reply) DropAfter(events int) Reply {
	r.trouble.drop = point{on: true, after: events}
	return r
}

// FailAfter sends the first events of r, then the error f as the service says it
// inside a stream that began with 200 (Anthropic: an event "error"; OpenAI: a
// data line with an "error" object; Responses: an event "response.failed" with
// the error's code and message), then ends the body. A request that does not
// stream gets f's status instead, as the service answers before a body.
func (r Reply) FailAfter(events int, f Failure) Reply {
	r.trouble.fail, r.trouble.failWith = point{on: true, after: events}, f
	return r
}

// Pace pauses d between the events of a stream.
func (r Reply) Pace(d time.Duration) Reply {
	r.trouble.pace = d
	return r
}

// IgnoreStream answers a streamed request as a plain one, as a server that does
// not stream would.
func (r Reply) IgnoreStream() Reply {
	r.trouble.plain = true
	return r
}
