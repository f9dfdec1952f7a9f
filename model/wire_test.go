package model_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/model"
)

// The tests in this file run the same scenarios through both providers, against
// one agenttest server that answers each in its own wire format.

var kinds = []string{agenttest.Anthropic, agenttest.OpenAI}

// wireProvider is the provider of kind at s, with a short request timeout so that
// a hung plain request fails within the test.
func wireProvider(kind string, s *agenttest.Server) model.Streamer {
	if kind == agenttest.Anthropic {
		return model.NewAnthropic(key, s.URL, model.WithRequestTimeout(500*time.Millisecond))
	}
	return model.NewOpenAI(key, s.URL+"/v1/", model.WithRequestTimeout(500*time.Millisecond))
}

// wireRun keeps the steps of a Recovery and of the Watch under it, in order, and
// the waits Recovery asked for instead of sleeping.
type wireRun struct {
	mu    sync.Mutex
	steps []model.Step
	waits []time.Duration
}

func (w *wireRun) observe(s model.Step) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = append(w.steps, s)
}

func (w *wireRun) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waits = append(w.waits, d)
	return ctx.Err()
}

// mostJitter takes the most jitter there is: a backoff d waits 3d/4.
func mostJitter(n int64) int64 { return n - 1 }

// complete runs plainRequest through Recovery over the provider of kind at s:
// streamed under a Watch with the warning and abort silences, or plain when they
// are zero.
func (w *wireRun) complete(kind string, s *agenttest.Server, silences [2]time.Duration, pol model.Policy) (model.Response, error) {
	var p model.Provider = wireProvider(kind, s)
	if silences[0] > 0 {
		p = model.NewWatch(wireProvider(kind, s), silences[0], silences[1], w.observe)
	}
	r := model.NewRecovery(p, pol, model.WithObserver(w.observe), model.WithSleep(w.sleep), model.WithJitter(mostJitter))
	return r.Complete(context.Background(), plainRequest)
}

func (w *wireRun) trace() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return model.Trace(w.steps)
}

// retryWaits are the waits the retry steps name.
func (w *wireRun) retryWaits() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, s := range w.steps {
		if s.Action == model.ActionRetry {
			out = append(out, s.Wait)
		}
	}
	return out
}

var (
	finalAnswer = agenttest.Message("end_turn", "It is sunny in Oslo.")
	// toolAnswer streams several events before its end, for troubles in the middle.
	toolAnswer = agenttest.Message("tool_use", "Let me look.", agenttest.Call("get_weather", `{"city":"Oslo"}`))
)

// An error inside a stream that began with 200 is an *APIError with status 200 and
// the service's own type and code, whichever the provider: what classification
// reads, never the message text.
func TestAnErrorEventInsideAStreamIsAnAPIError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind    string
		failure agenttest.Failure
		want    model.APIError
	}{
		{"anthropic", agenttest.Overload, model.APIError{Provider: "anthropic", Status: 200, Type: "overloaded_error", Message: "Overloaded"}},
		{"anthropic", agenttest.ServerError, model.APIError{Provider: "anthropic", Status: 200, Type: "api_error", Message: "Internal server error"}},
		{"openai", agenttest.Overload, model.APIError{Provider: "openai", Status: 200, Type: "service_unavailable_error", Code: "server_is_overloaded",
			Message: "Our servers are currently overloaded. Please try again later."}},
		{"openai", agenttest.ServerError, model.APIError{Provider: "openai", Status: 200, Type: "server_error",
			Message: "The server had an error processing your request."}},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.want.Type, func(t *testing.T) {
			s := agenttest.NewServer(t, toolAnswer.FailAfter(3, tt.failure))
			_, err := wireProvider(tt.kind, s).Stream(context.Background(), plainRequest, nil)
			var got *model.APIError
			if !errors.As(err, &got) {
				t.Fatalf("Stream = %v, want an *model.APIError", err)
			}
			if got.Provider != tt.want.Provider || got.Status != tt.want.Status || got.Type != tt.want.Type ||
				got.Code != tt.want.Code || !strings.HasPrefix(got.Message, tt.want.Message) {
				t.Errorf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

// A reply scripted once reads the same through both providers, plain and
// streamed: the server renders it in each wire format, and each provider reads it
// back.
func TestOneScriptBothFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply agenttest.Reply
		want  model.Response
	}{
		{"text", agenttest.Message("end_turn", "Grüße aus Oslo: sunny."),
			model.Response{Text: "Grüße aus Oslo: sunny.", Stop: model.StopEndTurn, Model: "test-model"}},
		{"text and two tool calls", agenttest.Message("tool_use", "Checking both.", agenttest.Call("get_weather", `{"city":"Oslo"}`), agenttest.Send("222", "hi")),
			model.Response{Text: "Checking both.", Stop: model.StopToolUse, Model: "test-model", ToolCalls: []model.ToolCall{
				{Name: "get_weather", Input: []byte(`{"city":"Oslo"}`)}, {Name: "commit_send_message", Input: []byte(`{"chat_id":"222","text":"hi"}`)}}}},
		{"tool call only", agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"Hi all"}`)),
			model.Response{Stop: model.StopToolUse, Model: "test-model", ToolCalls: []model.ToolCall{{Name: "prepare_reply", Input: []byte(`{"text":"Hi all"}`)}}}},
		{"cut at the output limit", agenttest.Message("max_tokens", "It is sun"),
			model.Response{Text: "It is sun", Stop: model.StopMaxTokens, Model: "test-model"}},
		{"refusal", agenttest.Message("refusal", "I can't help with that."),
			model.Response{Text: "I can't help with that.", Stop: model.StopRefusal, Model: "test-model"}},
	}
	for _, tt := range tests {
		for _, kind := range kinds {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				s := agenttest.NewServer(t, tt.reply)
				p := wireProvider(kind, s)
				plain, err := p.Complete(context.Background(), plainRequest)
				if err != nil {
					t.Fatal(err)
				}
				streamed, err := p.Stream(context.Background(), plainRequest, nil)
				if err != nil {
					t.Fatal(err)
				}
				for name, got := range map[string]model.Response{"Complete": plain, "Stream": streamed} {
					if !sameExceptIDs(got, tt.want) {
						t.Errorf("%s = %+v\nwant %+v", name, got, tt.want)
					}
				}
				if !reflect.DeepEqual(plain, streamed) {
					t.Errorf("Complete = %+v\nStream   = %+v", plain, streamed)
				}
				reqs := s.Requests()
				if len(reqs) != 2 || reqs[0].Format != kind || reqs[0].Streamed || !reqs[1].Streamed ||
					reqs[0].Model != "test-model" || reqs[0].MaxTokens != 64 || reqs[0].Messages != 1 {
					t.Errorf("requests = %+v, want one plain and one streamed %s request as sent", reqs, kind)
				}
			})
		}
	}
}

// sameExceptIDs compares replies with the tool calls' ids left out, which each
// format numbers its own way; every call must have one.
func sameExceptIDs(got, want model.Response) bool {
	for i := range got.ToolCalls {
		if got.ToolCalls[i].ID == "" {
			return false
		}
	}
	g := got
	g.ToolCalls = nil
	for _, c := range got.ToolCalls {
		g.ToolCalls = append(g.ToolCalls, model.ToolCall{Name: c.Name, Input: c.Input})
	}
	return sameResponse(g, want)
}

// A recorded reply of one API, served to the other, is translated: the fixture is
// written once too.
func TestARecordedReplyIsTranslated(t *testing.T) {
	t.Parallel()
	tests := []struct{ file, kind string }{
		{"anthropic/message_tool_use.json", "openai"},
		{"openai/chat_completion_tool_calls.json", "anthropic"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			native := map[string]string{"openai": "anthropic", "anthropic": "openai"}[tt.kind]
			s := agenttest.NewServer(t, recording(t, tt.file))
			want, err := wireProvider(native, s).Complete(context.Background(), plainRequest)
			if err != nil {
				t.Fatal(err)
			}
			for _, stream := range []bool{false, true} {
				var got model.Response
				if stream {
					got, err = wireProvider(tt.kind, s).Stream(context.Background(), plainRequest, nil)
				} else {
					got, err = wireProvider(tt.kind, s).Complete(context.Background(), plainRequest)
				}
				if err != nil || !sameResponse(got, want) {
					t.Errorf("%s (stream %v) = %+v, %v\nwant %+v", tt.kind, stream, got, err, want)
				}
			}
		})
	}
}
