package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/model"
)

var plainRequest = model.Request{Model: "test-model", System: "be brief", MaxTokens: 64,
	Messages: []model.Message{{Role: model.RoleUser, Text: "weather?"}},
	Tools: []model.ToolSpec{{Name: "get_weather", Description: "weather", Properties: map[string]any{
		"city": map[string]any{"type": "string"}}, Required: []string{"city"}}}}

func newProvider(kind, url string) model.Provider {
	if kind == "anthropic" {
		return model.NewAnthropic(key, url, model.WithRequestTimeout(5*time.Second))
	}
	return model.NewOpenAI(key, url+"/v1/", model.WithRequestTimeout(5*time.Second))
}

func TestProvidersReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind, file string
		want             model.Response
	}{
		{"anthropic end_turn", "anthropic", "anthropic/message_end_turn.json", model.Response{
			Text: "The current temperature in San Francisco is 68 degrees Fahrenheit.", Stop: model.StopEndTurn, Model: "claude-3-7-sonnet-20250219"}},
		{"anthropic tool_use", "anthropic", "anthropic/message_tool_use.json", model.Response{
			Text: "I'll get the current weather in San Francisco for you in Fahrenheit.", Stop: model.StopToolUse, Model: "claude-3-7-sonnet-20250219",
			ToolCalls: []model.ToolCall{{ID: "toolu_01TZR6ZrLHdpAWdmhVPuDfjQ", Name: "get_weather", Input: json.RawMessage(`{"city":"San Francisco","units":"fahrenheit"}`)}}}},
		{"openai stop", "openai", "openai/chat_completion_stop.json", model.Response{
			Text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or app like the Weather Channel or a local news station.",
			Stop: model.StopEndTurn, Model: "gpt-4o-2024-08-06"}},
		{"openai tool_calls", "openai", "openai/chat_completion_tool_calls.json", model.Response{
			Stop: model.StopToolUse, Model: "gpt-4o-2024-08-06", ToolCalls: []model.ToolCall{
				{ID: "call_fdNz3vOBKYgOIpMdWotB9MjY", Name: "GetWeatherArgs", Input: json.RawMessage(`{"city":"Edinburgh","country":"GB","units":"c"}`)},
				{ID: "call_h1DWI1POMJLb0KwIyQHWXD4p", Name: "get_stock_price", Input: json.RawMessage(`{"ticker":"AAPL","exchange":"NASDAQ"}`)}}}},
		{"openai length", "openai", "openai/chat_completion_finish_length.json", model.Response{
			Text: `{"`, Stop: model.StopMaxTokens, Model: "gpt-4o-2024-08-06"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, fixture(t, tt.file, 200))
			got, err := newProvider(tt.kind, s.URL).Complete(context.Background(), plainRequest)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.got()); n != 1 {
				t.Errorf("requests: got %d, want 1", n)
			}
			if !sameResponse(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func sameResponse(a, b model.Response) bool {
	if a.Text != b.Text || a.Stop != b.Stop || a.Model != b.Model || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := a.ToolCalls[i], b.ToolCalls[i]
		if x.ID != y.ID || x.Name != y.Name || !sameJSON(x.Input, y.Input) {
			return false
		}
	}
	return true
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// The Anthropic fixtures hold no non-streamed max_tokens reply: this is the
// end_turn message with only its stop_reason changed.
func TestAnthropicMaxTokens(t *testing.T) {
	t.Parallel()
	rep := fixture(t, "anthropic/message_end_turn.json", 200)
	rep.body = []byte(strings.Replace(string(rep.body), `"end_turn"`, `"max_tokens"`, 1))
	s := serve(t, rep)
	got, err := newProvider("anthropic", s.URL).Complete(context.Background(), plainRequest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Stop != model.StopMaxTokens {
		t.Errorf("stop: got %q, want %q", got.Stop, model.StopMaxTokens)
	}
}

func TestProvidersErrors(t *testing.T) {
	t.Parallel()
	yes := true
	tests := []struct {
		name, kind string
		rep        func(t *testing.T) reply
		want       model.APIError
		tooLong    bool
	}{
		{"anthropic 429 retry-after", "anthropic", func(t *testing.T) reply {
			return fixture(t, "anthropic/http_429_rate_limit_headers.txt", 0).with(fixture(t, "anthropic/error_429_rate_limit_short.json", 0))
		}, model.APIError{Status: 429, Type: "rate_limit_error", RetryAfter: 16 * time.Second, ShouldRetry: &yes}, false},
		{"anthropic 529", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/http_529_overloaded.txt", 0) },
			model.APIError{Status: 529, Type: "overloaded_error", ShouldRetry: &yes}, false},
		{"anthropic 529 details null", "anthropic", func(t *testing.T) reply {
			return fixture(t, "anthropic/error_529_overloaded_with_details_null.json", 529)
		}, model.APIError{Status: 529, Type: "overloaded_error"}, false},
		{"anthropic 500", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/error_500_api_error.json", 500) },
			model.APIError{Status: 500, Type: "api_error"}, false},
		{"anthropic 401", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/error_401_authentication.json", 401) },
			model.APIError{Status: 401, Type: "authentication_error"}, false},
		{"anthropic 403", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/error_403_permission.json", 403) },
			model.APIError{Status: 403, Type: "permission_error"}, false},
		{"anthropic 413 from the edge", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/error_413_request_too_large.json", 413) },
			model.APIError{Status: 413, Type: "request_too_large"}, false},
		{"anthropic 400 prompt too long", "anthropic", func(t *testing.T) reply { return fixture(t, "anthropic/error_400_prompt_too_long.json", 400) },
			model.APIError{Status: 400, Type: "invalid_request_error"}, true},
		{"openai 429 rpm", "openai", func(t *testing.T) reply {
			return fixture(t, "openai/http_429_headers_responses_api.txt", 0).with(fixture(t, "openai/error_429_rate_limit_exceeded_rpm.json", 0))
		}, model.APIError{Status: 429, Type: "requests", Code: "rate_limit_exceeded"}, false},
		{"openai 429 quota", "openai", func(t *testing.T) reply { return fixture(t, "openai/error_429_insufficient_quota.json", 429) },
			model.APIError{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota"}, false},
		{"openai 500", "openai", func(t *testing.T) reply { return fixture(t, "openai/error_500_server_error.json", 500) },
			model.APIError{Status: 500, Type: "server_error"}, false},
		{"openai 503", "openai", func(t *testing.T) reply { return fixture(t, "openai/error_503_server_is_overloaded.json", 503) },
			model.APIError{Status: 503, Type: "service_unavailable_error", Code: "server_is_overloaded"}, false},
		{"openai 400 context length", "openai", func(t *testing.T) reply {
			return fixture(t, "openai/error_400_context_length_exceeded.json", 400)
		}, model.APIError{Status: 400, Type: "invalid_request_error", Code: "context_length_exceeded"}, true},
		{"llama.cpp 400 context size", "openai", func(t *testing.T) reply {
			return fixture(t, "compatible/llamacpp_400_exceed_context_size.json", 400)
		}, model.APIError{Status: 400, Type: "exceed_context_size_error", Code: "400"}, true},
		{"llama.cpp 503 loading", "openai", func(t *testing.T) reply { return fixture(t, "compatible/llamacpp_503_loading_model.json", 503) },
			model.APIError{Status: 503, Type: "unavailable_error", Code: "503"}, false},
		{"vLLM 400 context length", "openai", func(t *testing.T) reply { return fixture(t, "compatible/vllm_400_context_length.json", 400) },
			model.APIError{Status: 400, Type: "BadRequestError", Code: "400"}, true},
		{"Ollama 503 busy", "openai", func(t *testing.T) reply { return fixture(t, "compatible/ollama_503_server_busy.json", 503) },
			model.APIError{Status: 503, Type: "api_error"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, tt.rep(t))
			_, err := newProvider(tt.kind, s.URL).Complete(context.Background(), plainRequest)
			if n := len(s.got()); n != 1 {
				t.Errorf("requests: got %d, want 1", n)
			}
			var got *model.APIError
			if !errors.As(err, &got) {
				t.Fatalf("got %v, want an *model.APIError", err)
			}
			if got.Status != tt.want.Status || got.Type != tt.want.Type || got.Code != tt.want.Code ||
				got.RetryAfter != tt.want.RetryAfter || !sameBool(got.ShouldRetry, tt.want.ShouldRetry) {
				t.Errorf("got %+v, want %+v", *got, tt.want)
			}
			if errors.Is(err, model.ErrPromptTooLong) != tt.tooLong {
				t.Errorf("errors.Is(err, ErrPromptTooLong): got %v, want %v", !tt.tooLong, tt.tooLong)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the key is in %q", err)
			}
		})
	}
}

func sameBool(a, b *bool) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func TestProvidersConnectionError(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			s := serve(t, reply{status: 200})
			url := s.URL
			s.Close()
			_, err := newProvider(kind, url).Complete(context.Background(), plainRequest)
			if !errors.Is(err, model.ErrConnection) {
				t.Fatalf("got %v, want ErrConnection", err)
			}
			var ce *model.ConnectionError
			if !errors.As(err, &ce) || strings.Contains(err.Error(), key) {
				t.Errorf("got %v, want a *ConnectionError without the key", err)
			}
		})
	}
}

// A service that echoes the key back must not put it in the error.
func TestProvidersNeverShowTheKey(t *testing.T) {
	t.Parallel()
	echo := reply{status: 401, header: http.Header{"Content-Type": {"application/json"}},
		body: []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`)}
	echoOpenAI := reply{status: 401, header: http.Header{"Content-Type": {"application/json"}},
		body: []byte(`{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)}
	for kind, rep := range map[string]reply{"anthropic": echo, "openai": echoOpenAI} {
		t.Run(kind, func(t *testing.T) {
			s := serve(t, rep)
			_, err := newProvider(kind, s.URL).Complete(context.Background(), plainRequest)
			if err == nil || strings.Contains(err.Error(), key) {
				t.Errorf("got %v, want an error without the key", err)
			}
			r := model.NewRecovery(newProvider(kind, s.URL), model.Policy{})
			_, err = r.Complete(context.Background(), plainRequest)
			if err == nil || strings.Contains(err.Error(), key) {
				t.Errorf("recovery: got %v, want an error without the key", err)
			}
			if got := s.got()[0].header.Get("Authorization"); got != "Bearer "+key {
				t.Errorf("Authorization: got %q, want the bearer key", got)
			}
		})
	}
}

func TestOpenAIWithoutKeySendsNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	s := serve(t, fixture(t, "openai/chat_completion_stop.json", 200))
	if _, err := model.NewOpenAI("", s.URL+"/v1/").Complete(context.Background(), plainRequest); err != nil {
		t.Fatal(err)
	}
	if got := s.got()[0].header.Get("Authorization"); got != "" {
		t.Errorf("Authorization: got %q, want none", got)
	}
}

func TestRequestBodies(t *testing.T) {
	t.Parallel()
	req := plainRequest
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_weather", Input: json.RawMessage(`{"city":"Oslo"}`)}}},
		model.Message{Role: model.RoleTool, ToolResults: []model.ToolResult{{CallID: "c1", Content: "sunny"}}, Text: "answer now"})
	tests := []struct {
		kind, file string
		want       []string
	}{
		{"anthropic", "anthropic/message_end_turn.json", []string{`"model":"test-model"`, `"max_tokens":64`,
			`"tool_use_id":"c1"`, `"type":"tool_use"`, `"input_schema"`, `"system":[{"text":"be brief"`}},
		{"openai", "openai/chat_completion_stop.json", []string{`"model":"test-model"`, `"max_tokens":64`,
			`"tool_call_id":"c1"`, `"arguments":"{\"city\":\"Oslo\"}"`, `"role":"system"`, `"parameters"`}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			s := serve(t, fixture(t, tt.file, 200))
			if _, err := newProvider(tt.kind, s.URL).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := string(s.got()[0].body)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %s: %s", w, body)
				}
			}
		})
	}
}
