// Package agenttest is a scripted model server for tests. It speaks Anthropic's
// Messages API over real HTTP, answering each request with the next scripted reply
// (the last one repeats): a message as JSON, or as the event stream the API sends
// when a request asks for "stream": true, built from the same message; an error
// status with its body either way, as the API answers before a stream begins.
package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// Reply is one scripted answer: a Messages API message (Status 200) or an error body.
type Reply struct {
	Status int
	Body   []byte
}

// Use is one tool call in a scripted message: the tool's name and its input object.
type Use struct {
	Name  string
	Input string
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

// Message is a message with text (omitted when empty) and tool calls, stopped for
// stop ("end_turn", "tool_use", "max_tokens", "refusal").
func Message(stop, text string, uses ...Use) Reply {
	content := []map[string]any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for i, u := range uses {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", i+1),
			"name": u.Name, "input": json.RawMessage(u.Input)})
	}
	body, err := json.Marshal(map[string]any{"id": "msg_01", "type": "message", "role": "assistant",
		"model": "claude-test", "content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
	if err != nil {
		panic(err)
	}
	return Reply{Status: http.StatusOK, Body: body}
}

// File is the reply whose body is the file at path, with status.
func File(t testing.TB, path string, status int) Reply {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Reply{Status: status, Body: body}
}

// Request is one request the server received.
type Request struct {
	Header   http.Header
	Body     []byte
	Streamed bool
}

// Server is the scripted model server. Point a provider's base URL at URL.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// NewServer starts a server answering with replies in order; it closes with the test.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	if len(replies) == 0 {
		t.Fatal("agenttest: no replies")
	}
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var head struct {
		Stream bool `json:"stream"`
	}
	json.Unmarshal(body, &head)
	s.mu.Lock()
	rep := s.replies[min(len(s.requests), len(s.replies)-1)]
	s.requests = append(s.requests, Request{Header: r.Header.Clone(), Body: body, Streamed: head.Stream})
	s.mu.Unlock()
	if rep.Status != http.StatusOK || !head.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		w.Write(rep.Body)
		return
	}
	events, err := Events(rep.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(events)
}

// Events turns a Messages API message into the event stream that delivers it:
// message_start, a start, one delta and a stop per content block, message_delta
// with the stop reason, message_stop.
func Events(message []byte) ([]byte, error) {
	var m struct {
		ID         string            `json:"id"`
		Model      string            `json:"model"`
		Content    []json.RawMessage `json:"content"`
		StopReason string            `json:"stop_reason"`
	}
	if err := json.Unmarshal(message, &m); err != nil {
		return nil, fmt.Errorf("agenttest: not a message: %w", err)
	}
	var b bytes.Buffer
	event := func(name string, data map[string]any) {
		data["type"] = name
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, j)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": m.ID, "type": "message", "role": "assistant",
		"content": []any{}, "model": m.Model, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	for i, raw := range m.Content {
		var block struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal(raw, &block); err != nil {
			return nil, fmt.Errorf("agenttest: content block %d: %w", i, err)
		}
		switch block.Type {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": block.Text}})
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use",
				"id": block.ID, "name": block.Name, "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta",
				"partial_json": string(block.Input)}})
		default:
			return nil, fmt.Errorf("agenttest: content block %d: type %q", i, block.Type)
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": m.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{})
	return b.Bytes(), nil
}
