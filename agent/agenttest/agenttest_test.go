package agenttest_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
)

// post sends body to the server's path and returns the response with its body.
func post(t *testing.T, s *agenttest.Server, path, body string) (*http.Response, string) {
	t.Helper()
	res, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(data)
}

const (
	anthropicPath = "/v1/messages"
	openaiPath    = "/chat/completions"
	responsesPath = "/v1/responses"
	request       = `{"model":"m","max_tokens":64,"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`
	streamRequest = `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
)

func TestFailuresCarryTheRecordedHeaders(t *testing.T) {
	tests := []struct {
		name, path string
		reply      agenttest.Reply
		status     int
		header     map[string]string // "" means absent
		body       string
	}{
		{"anthropic 429", anthropicPath, agenttest.RateLimited(16 * time.Second), 429,
			map[string]string{"X-Should-Retry": "true", "Retry-After": "16", "Request-Id": "req_011CcRAg8tTKR3QtEPLyERT8"}, `"rate_limit_error"`},
		{"anthropic 429 naming no wait", anthropicPath, agenttest.RateLimited(0), 429,
			map[string]string{"X-Should-Retry": "true", "Retry-After": ""}, `"rate_limit_error"`},
		{"anthropic 529", anthropicPath, agenttest.Fail(agenttest.Overload), 529,
			map[string]string{"X-Should-Retry": "true", "Request-Id": "req_01RCc7MbLyQNtGKzBTv8VCep"},
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"anthropic 500", anthropicPath, agenttest.Fail(agenttest.ServerError), 500,
			map[string]string{"X-Should-Retry": "", "Request-Id": "req_011CXmPYtyatkKmZfJxWDowU"}, `"api_error"`},
		{"anthropic 400", anthropicPath, agenttest.Fail(agenttest.PromptTooLong), 400,
			nil, `"prompt is too long: 219898 tokens > 200000 maximum"`},
		{"openai 429 in milliseconds", openaiPath, agenttest.RateLimitedMs(300 * time.Millisecond), 429,
			map[string]string{"Retry-After-Ms": "300", "Retry-After": "1"}, `"rate_limit_exceeded"`},
		{"openai 503", openaiPath, agenttest.Fail(agenttest.Overload), 503, nil, `"server_is_overloaded"`},
		{"openai 401", openaiPath, agenttest.Fail(agenttest.AuthError), 401, nil, `"invalid_api_key"`},
		{"openai 400", "/v1" + openaiPath, agenttest.Fail(agenttest.PromptTooLong), 400, nil, `"context_length_exceeded"`},
		{"responses 503", responsesPath, agenttest.Fail(agenttest.Overload), 503, nil, `"server_is_overloaded"`},
		{"responses 429", responsesPath, agenttest.RateLimited(2 * time.Second), 429, map[string]string{"Retry-After": "2"}, `"rate_limit_exceeded"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := agenttest.NewServer(t, tt.reply)
			res, body := post(t, s, tt.path, streamRequest)
			if res.StatusCode != tt.status || !strings.Contains(body, tt.body) {
				t.Errorf("got %d %s, want %d with %s", res.StatusCode, body, tt.status, tt.body)
			}
			for k, want := range tt.header {
				if got := res.Header.Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestStreamsEndAsTheAPIsDo(t *testing.T) {
	msg := agenttest.Message("tool_use", "Looking.", agenttest.Call("get_weather", `{"city":"Oslo"}`))
	tests := []struct{ path, first, last string }{
		{anthropicPath, "event: message_start\n", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
		{openaiPath, `data: {"choices":[{"delta":{"content":"","refusal":null,"role":"assistant"}`, "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			s := agenttest.NewServer(t, msg)
			res, body := post(t, s, tt.path, streamRequest)
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type = %q", ct)
			}
			if !strings.HasPrefix(body, tt.first) || !strings.HasSuffix(body, tt.last) {
				t.Errorf("stream:\n%s\nwant it to begin %q and end %q", body, tt.first, tt.last)
			}
		})
	}
}

// An error inside a stream comes after the events before it, and ends the body.
func TestFailAfter(t *testing.T) {
	msg := agenttest.Message("end_turn", "It is sunny.").FailAfter(2, agenttest.Overload)
	tests := []struct{ path, last string }{
		{anthropicPath, "event: error\ndata: {\"type\":\"error\",\"error\":{\"details\":null,\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}              }\n\n"},
		{openaiPath, "data: {\"error\":{\"code\":\"server_is_overloaded\",\"message\":\"Our servers are currently overloaded. Please try again later.\",\"param\":null,\"type\":\"service_unavailable_error\"}}\n\n"},
		{responsesPath, "event: response.failed\ndata: {\"response\":{\"background\":false,\"created_at\":1727346168,\"error\":{\"code\":\"server_is_overloaded\",\"message\":\"Our servers are currently overloaded. Please try again later.\"},\"id\":\"resp_agenttest_failed\",\"metadata\":{},\"object\":\"response\",\"status\":\"failed\",\"usage\":null},\"sequence_number\":1,\"type\":\"response.failed\"}\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			s := agenttest.NewServer(t, msg)
			res, body := post(t, s, tt.path, streamRequest)
			if res.StatusCode != 200 || !strings.HasSuffix(body, tt.last) || strings.Count(body, "\n\n") != 3 {
				t.Errorf("got %d:\n%s\nwant 200, two events, then %q", res.StatusCode, body, tt.last)
			}
			if res, body := post(t, s, tt.path, request); res.StatusCode == 200 {
				t.Errorf("a plain request got 200 %s, want the overload's status", body)
			}
		})
	}
}

func TestDropAfterBreaksTheBody(t *testing.T) {
	s := agenttest.NewServer(t, agenttest.Message("end_turn", "It is sunny in Oslo today.").DropAfter(1))
	for _, body := range []string{request, streamRequest} {
		res, err := http.Post(s.URL+anthropicPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil {
			t.Errorf("reading the body of %s: no error, want it broken off", body)
		}
	}
}

// A script can depend on the request: here every odd request is overloaded. The
// server records each request as sent.
func TestNewServerFuncAndTheRecord(t *testing.T) {
	s := agenttest.NewServerFunc(t, func(r agenttest.Request) agenttest.Reply {
		if r.N%2 == 1 {
			return agenttest.Fail(agenttest.Overload)
		}
		return agenttest.Message("end_turn", "ok")
	})
	var got []int
	for _, path := range []string{anthropicPath, anthropicPath, openaiPath, "/v1/other"} {
		res, _ := post(t, s, path, request)
		got = append(got, res.StatusCode)
	}
	if want := []int{529, 200, 503, 404}; !slices.Equal(got, want) {
		t.Errorf("statuses = %v, want %v", got, want)
	}
	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests = %d, want 4", len(reqs))
	}
	r := reqs[2]
	if r.N != 3 || r.Format != agenttest.OpenAI || r.Model != "m" || r.MaxTokens != 64 || r.Messages != 1 || r.Streamed ||
		!bytes.Equal(r.Body, []byte(request)) || reqs[3].Format != "" {
		t.Errorf("request 3 = %+v, want it recorded as sent", r)
	}
	if gaps := s.Gaps(); len(gaps) != 3 || gaps[0] < 0 {
		t.Errorf("gaps = %v, want 3", gaps)
	}
}

// The server reads what a client sent back: the tools offered and the tool
// results, from Claude Code's real request (system entries among the messages,
// the query ?beta=true, always streamed), from Codex's real request (the
// Responses API, MCP tools in a namespace) and from an OpenAI-compatible one; a
// script answers from the last result.
func TestTheRequestCarriesToolsAndResults(t *testing.T) {
	claude, err := os.ReadFile("testdata/claude-code-request.json")
	if err != nil {
		t.Fatal(err)
	}
	codex, err := os.ReadFile("testdata/codex-request.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, body string
		messages         int
		tools            []string
		results          []agenttest.ToolResult
	}{
		{"claude code", anthropicPath + "?beta=true", string(claude), 3, []string{"Agent", "Bash", "CronCreate", "CronDelete", "CronList",
			"Edit", "EnterWorktree", "ExitWorktree", "ListAgents", "Monitor", "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup",
			"SendMessage", "Skill", "TaskStop", "WebFetch", "WebSearch", "Workflow", "Write"},
			[]agenttest.ToolResult{{UseID: "toolu_01", Content: "1\tthe secret word is heron\n2\t"}}},
		{"anthropic blocks", anthropicPath, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"f","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},` +
			`{"type":"tool_result","tool_use_id":"b","is_error":true,"content":"denied"}]}],"tools":[{"name":"f"}]}`, 3, []string{"f"},
			[]agenttest.ToolResult{{UseID: "a", Content: "one\ntwo"}, {UseID: "b", Content: "denied", IsError: true}}},
		{"codex", responsesPath, string(codex), 2, []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
			"request_user_input", "mcp__countersign__await_outcome", "mcp__countersign__commit_publish_post", "mcp__countersign__commit_send_message",
			"mcp__countersign__get_operation", "mcp__countersign__list_envelopes", "mcp__countersign__list_pending", "mcp__countersign__prepare_reply",
			"mcp__countersign__read_envelope", "mcp__countersign__request_verification"},
			[]agenttest.ToolResult{{UseID: "call_01", Content: "Wall time: 0.0050 seconds\nOutput:\n{\"operations\":[]}"}}},
		{"openai", openaiPath, `{"model":"m","stream":true,"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"},` +
			`{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"call_1","content":"{\"status\":\"pending\"}"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
			3, []string{"f"}, []agenttest.ToolResult{{UseID: "call_1", Content: `{"status":"pending"}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := agenttest.NewServerFunc(t, func(r agenttest.Request) agenttest.Reply {
				last, ok := r.LastResult()
				if !ok {
					return agenttest.Fail(agenttest.ServerError)
				}
				return agenttest.Message("end_turn", "got "+last.UseID)
			})
			// The script fails the request unless it finds a result.
			if res, body := post(t, s, tt.path, tt.body); res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
				t.Errorf("answer %d %s:\n%s\nwant the scripted stream", res.StatusCode, res.Header.Get("Content-Type"), body)
			}
			r := s.Requests()[0]
			format := map[string]string{openaiPath: agenttest.OpenAI, responsesPath: agenttest.Responses}[tt.path]
			if r.Format != cmp.Or(format, agenttest.Anthropic) || r.Messages != tt.messages || !r.Streamed ||
				!slices.Equal(r.Tools, tt.tools) || !slices.Equal(r.Results, tt.results) {
				t.Errorf("request = format %q, %d messages, streamed %v, tools %v, results %+v; want %d, true, %v, %+v",
					r.Format, r.Messages, r.Streamed, r.Tools, r.Results, tt.messages, tt.tools, tt.results)
			}
		})
	}
}

// No two tool calls of a conversation share an id: the first reply numbers its
// calls toolu_01, toolu_02; a reply in a conversation with one assistant turn
// behind it, toolu_02_01. (Claude Code drops a result whose id it has seen.)
func TestToolCallIDsDifferAcrossTurns(t *testing.T) {
	first := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	second := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"system","content":"s"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"f","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"ok"}]}]}`
	tests := []struct{ path, body, want string }{
		{anthropicPath, first, `"id":"toolu_01"`},
		{anthropicPath, second, `"id":"toolu_02_01"`},
		{openaiPath, first, `"id":"call_01"`},
		{openaiPath, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[]},{"role":"tool","tool_call_id":"call_01","content":"ok"}]}`, `"id":"call_02_01"`},
		{responsesPath, `{"model":"m","input":[{"type":"message","role":"user","content":"hi"}]}`, `"call_id":"call_01"`},
		{responsesPath, `{"model":"m","input":[{"type":"message","role":"user","content":"hi"},{"type":"reasoning"},{"type":"function_call","call_id":"call_01"},` +
			`{"type":"function_call_output","call_id":"call_01","output":"ok"}]}`, `"call_id":"call_02_01"`},
	}
	for _, tt := range tests {
		s := agenttest.NewServer(t, agenttest.Message("tool_use", "", agenttest.Call("f", `{}`)))
		if _, body := post(t, s, tt.path, tt.body); !strings.Contains(body, tt.want) {
			t.Errorf("%s %s:\n%s\nwant %s", tt.path, tt.body, body, tt.want)
		}
	}
}

// Codex reads a Responses stream: response.created, each output item added,
// its deltas and done, then response.completed with the usage. A script names
// an MCP tool as Claude Code does, mcp__countersign__list_pending; to a request
// that offers it in the namespace mcp__countersign, the call goes by its name
// and that namespace, as Codex calls it (a flat name is "unsupported call").
func TestResponsesStreamCallsANamespacedTool(t *testing.T) {
	s := agenttest.NewServer(t, agenttest.Message("tool_use", "Checking.", agenttest.Call("mcp__countersign__list_pending", `{}`)))
	req := `{"model":"m","stream":true,"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"d"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],` +
		`"tools":[{"type":"namespace","name":"mcp__countersign","tools":[{"type":"function","name":"list_pending"}]}]}`
	res, body := post(t, s, responsesPath, req)
	var types []string
	var call map[string]any
	for _, ev := range strings.Split(strings.TrimSpace(body), "\n\n") {
		name, data, _ := strings.Cut(strings.TrimPrefix(ev, "event: "), "\ndata: ")
		types = append(types, name)
		var e struct {
			Type string         `json:"type"`
			Item map[string]any `json:"item"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil || e.Type != name {
			t.Fatalf("event %q: data %s (%v), want its type inside", name, data, err)
		}
		if name == "response.output_item.done" && e.Item["type"] == "function_call" {
			call = e.Item
		}
	}
	want := []string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_item.done", "response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.delta", "response.output_item.done", "response.completed"}
	if res.StatusCode != 200 || !slices.Equal(types, want) {
		t.Errorf("got %d with events %v, want %v", res.StatusCode, types, want)
	}
	if call["name"] != "list_pending" || call["namespace"] != "mcp__countersign" || call["call_id"] != "call_01" || call["arguments"] != "{}" {
		t.Errorf("function call %v, want list_pending in namespace mcp__countersign, call_01, arguments {}", call)
	}
	if !strings.Contains(body, `"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,`) {
		t.Errorf("no usage in response.completed:\n%s", body)
	}
	if r := s.Requests()[0]; r.Format != agenttest.Responses || r.Messages != 1 || !slices.Equal(r.Tools, []string{"mcp__countersign__list_pending"}) {
		t.Errorf("request = format %q, %d messages, tools %v", r.Format, r.Messages, r.Tools)
	}
}
