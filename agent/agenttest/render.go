package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// message is a model's reply in neither API's words. stop is in Anthropic's.
type message struct {
	id, model string
	turn      int // the assistant's turn it is in its conversation, from 1
	stop      string
	text      string
	uses      []Use
}

// finishReasons are OpenAI's words for Anthropic's stop reasons.
var finishReasons = map[string]string{"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
	"max_tokens": "length", "refusal": "content_filter"}

func finishReason(stop string) string {
	if f, ok := finishReasons[stop]; ok {
		return f
	}
	return stop
}

func stopReason(finish string) string {
	for stop, f := range finishReasons {
		if f == finish && stop != "stop_sequence" {
			return stop
		}
	}
	return finish
}

// response is what the server writes: the status, headers and body in parts (the
// events of a stream, or a plain body in two halves), in format.
type response struct {
	status int
	header http.Header
	parts  [][]byte
	stream bool
	format string
}

// render is r as the answer to req.
func (r Reply) render(req Request) (response, error) {
	t := r.trouble
	streamed := req.Streamed && !t.plain
	switch {
	case r.fail != 0:
		return failed(req, r.fail, r.wait, r.waitMs), nil
	case t.fail.on && !streamed:
		return failed(req, t.failWith, 0, false), nil
	case r.msg != nil:
		return rendered(req, *r.msg, streamed), nil
	case r.Status != 0 && r.Status != http.StatusOK:
		return plain(r.Status, req.Format, http.Header{"Content-Type": {"application/json"}}, r.Body), nil
	case isStream(r.Body):
		format := OpenAI
		switch b := bytes.TrimSpace(r.Body); {
		case bytes.HasPrefix(b, []byte("event: response.")):
			format = Responses
		case bytes.HasPrefix(b, []byte("event:")):
			format = Anthropic
		}
		return response{status: http.StatusOK, header: http.Header{"Content-Type": {"text/event-stream"}},
			parts: splitEvents(r.Body), stream: true, format: format}, nil
	}
	m, format, err := parseMessage(r.Body)
	if err != nil {
		return response{}, err
	}
	if format == req.Format && !streamed {
		return plain(http.StatusOK, format, successHeader(format, false), r.Body), nil
	}
	return rendered(req, m, streamed), nil
}

// failed is the failure f as req's format says it.
func failed(req Request, f Failure, wait time.Duration, ms bool) response {
	w := failure(req.Format, f, wait, ms)
	return plain(w.status, req.Format, w.header, w.body)
}

// rendered is m in req's format, streamed or not.
func rendered(req Request, m message, streamed bool) response {
	if m.model == "" {
		m.model = req.Model
	}
	m.turn = req.turn
	if m.id == "" {
		m.id = fmt.Sprintf("%s_agenttest_%02d", map[string]string{Anthropic: "msg", OpenAI: "chatcmpl", Responses: "resp"}[req.Format], req.N)
	}
	if !streamed {
		var body []byte
		switch req.Format {
		case OpenAI:
			body = openaiCompletion(m)
		case Responses:
			body = responsesPlain(req, m)
		default:
			body = anthropicMessage(m)
		}
		return plain(http.StatusOK, req.Format, successHeader(req.Format, false), body)
	}
	res := response{status: http.StatusOK, header: successHeader(req.Format, true), stream: true, format: req.Format}
	switch req.Format {
	case OpenAI:
		res.parts = openaiChunks(m, req.usage)
	case Responses:
		res.parts = responsesEvents(req, m)
	default:
		res.parts = anthropicEvents(m)
	}
	return res
}

// plain is a body that does not stream, in two halves, so that a trouble can
// strike in its middle.
func plain(status int, format string, h http.Header, body []byte) response {
	h = h.Clone()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", fmt.Sprint(len(body)))
	half := len(body) / 2
	return response{status: status, header: h, parts: [][]byte{body[:half], body[half:]}, format: format}
}

// successHeader is the header of a successful answer: for Anthropic, the recorded
// one (request id, rate-limit headers).
func successHeader(format string, stream bool) http.Header {
	switch {
	case format == Anthropic && stream:
		return recordedCapture("anthropic/http_200_stream_headers.txt").header
	case format == Anthropic:
		return recordedCapture("anthropic/http_200_message_with_ratelimit_headers.txt").header
	case stream:
		return http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
	}
	return http.Header{"Content-Type": {"application/json"}}
}

// ping is what a stream of format sends to show it is alive.
func ping(format string) []byte {
	if format != Anthropic {
		return []byte(": ping\n\n")
	}
	return []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")
}

// failEvent is the failure w sent inside a stream of format.
func failEvent(format string, w failureWire) []byte {
	switch format {
	case OpenAI:
		return fmt.Appendf(nil, "data: %s\n\n", w.event)
	case Responses:
		return responsesFailEvent("resp_agenttest_failed", w)
	}
	return fmt.Appendf(nil, "event: error\ndata: %s\n\n", w.event)
}

func isStream(body []byte) bool {
	b := bytes.TrimSpace(body)
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:"))
}

// splitEvents splits a recorded stream into its events, each with its blank line.
func splitEvents(body []byte) [][]byte {
	var parts [][]byte
	for len(body) > 0 {
		i := bytes.Index(body, []byte("\n\n"))
		if i < 0 {
			return append(parts, body)
		}
		parts, body = append(parts, body[:i+2]), body[i+2:]
	}
	return parts
}

// parseMessage reads a message of either API.
func parseMessage(body []byte) (message, string, error) {
	var head struct {
		Type   string `json:"type"`
		Object string `json:"object"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return message{}, "", fmt.Errorf("agenttest: not a message: %w", err)
	}
	switch {
	case head.Type == "message":
		m, err := parseAnthropic(body)
		return m, Anthropic, err
	case head.Object == "chat.completion":
		m, err := parseOpenAI(body)
		return m, OpenAI, err
	}
	return message{}, "", fmt.Errorf("agenttest: neither a Messages API message nor a chat completion")
}

func parseAnthropic(body []byte) (message, error) {
	var a struct {
		ID, Model  string
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type, Text, ID, Name string
			Input                json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return message{}, fmt.Errorf("agenttest: not a message: %w", err)
	}
	m := message{id: a.ID, model: a.Model, stop: a.StopReason}
	for i, b := range a.Content {
		switch b.Type {
		case "text":
			m.text += b.Text
		case "tool_use":
			m.uses = append(m.uses, Use{Name: b.Name, Input: string(b.Input), id: b.ID})
		default:
			return message{}, fmt.Errorf("agenttest: content block %d: type %q", i, b.Type)
		}
	}
	return m, nil
}

func parseOpenAI(body []byte) (message, error) {
	var c struct {
		ID, Model string
		Choices   []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(body, &c); err != nil || len(c.Choices) == 0 {
		return message{}, fmt.Errorf("agenttest: not a chat completion: %v", err)
	}
	ch := c.Choices[0]
	m := message{id: c.ID, model: c.Model, stop: stopReason(ch.FinishReason)}
	if ch.Message.Content != nil {
		m.text = *ch.Message.Content
	}
	for _, tc := range ch.Message.ToolCalls {
		m.uses = append(m.uses, Use{Name: tc.Function.Name, Input: tc.Function.Arguments, id: tc.ID})
	}
	return m, nil
}

// cutUse reports whether use i of m is cut by the output limit in a stream: the
// last one of a reply stopped at max_tokens.
func cutUse(m message, i int) bool {
	return m.stop == "max_tokens" && i == len(m.uses)-1
}

// halves splits s in two at a character boundary, the first half possibly empty.
func halves(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}
