package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/model"
)

// recording is the reply whose body is testdata/<name>, a recorded message or
// event stream, with status 200.
func recording(t *testing.T, name string) agenttest.Reply {
	t.Helper()
	return agenttest.File(t, filepath.Join("testdata", name), http.StatusOK)
}

// streamed is whether each request the server got asked for a stream.
func streamed(s *agenttest.Server) []bool {
	var got []bool
	for _, r := range s.Requests() {
		got = append(got, r.Streamed)
	}
	return got
}

func TestStreamReadsTheWholeReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, kind, file string
		want             model.Response
	}{
		{"anthropic text", "anthropic", "anthropic/stream_text_end_turn.sse",
			model.Response{Text: "Hello there!", Stop: model.StopEndTurn, Model: "claude-3-opus-latest"}},
		{"anthropic tool use", "anthropic", "anthropic/stream_tool_use.sse",
			model.Response{Text: "I'll check the current weather in Paris for you.", Stop: model.StopToolUse, Model: "claude-sonnet-4-20250514",
				ToolCalls: []model.ToolCall{{ID: "toolu_01NRLabsLyVHZPKxbKvkfSMn", Name: "get_weather", Input: json.RawMessage(`{"location": "Paris"}`)}}}},
		{"openai tool call", "openai", "openai/stream_single_tool_call.sse",
			model.Response{Stop: model.StopToolUse, Model: "gpt-4o-2024-08-06",
				ToolCalls: []model.ToolCall{{ID: "call_c91SqDXlYFuETYv8mUHzz6pp", Name: "GetWeatherArgs", Input: json.RawMessage(`{"city":"Edinburgh","country":"UK","units":"c"}`)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := agenttest.NewServer(t, recording(t, tt.file))
			p := newProvider(tt.kind, s.URL).(model.Streamer)
			alive := 0
			got, err := p.Stream(context.Background(), plainRequest, func() { alive++ })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Stream =\n%+v\nwant\n%+v", got, tt.want)
			}
			if alive == 0 {
				t.Error("alive was never called")
			}
		})
	}
}

func TestWatchAbortsAStalledStreamAndAsksWithoutStreaming(t *testing.T) {
	t.Parallel()
	// message_start, content_block_start, ping; then silence, until the client gives up.
	s := agenttest.NewServer(t, recording(t, "anthropic/stream_text_end_turn.sse").StallAfter(3, 0),
		recording(t, "anthropic/message_end_turn.json"))
	var mu sync.Mutex
	var steps []model.Step
	w := model.NewWatch(newProvider("anthropic", s.URL).(model.Streamer), 50*time.Millisecond, 400*time.Millisecond, func(st model.Step) {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, st)
	})
	got, err := w.Complete(context.Background(), plainRequest)
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != "The current temperature in San Francisco is 68 degrees Fahrenheit." {
		t.Errorf("text = %q, want the non-streamed reply's", got.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	var path []model.Action
	for _, st := range steps {
		path = append(path, st.Action)
	}
	// Warned, then aborted once. A machine slow to deliver the stream's head may
	// warn on it too, before the silence: a warning more is no other path.
	if n := len(path); n < 2 || path[n-1] != model.ActionStallAbort || slices.ContainsFunc(path[:n-1], func(a model.Action) bool { return a != model.ActionStallWarning }) {
		t.Errorf("steps = %v, want one or more stall warnings, then the abort", path)
	}
	if got := streamed(s); !reflect.DeepEqual(got, []bool{true, false}) {
		t.Errorf("requests streamed = %v, want a stream then one plain request", got)
	}
}

func TestWatchLetsASlowStreamFinish(t *testing.T) {
	t.Parallel()
	// Each event comes well within the abort time, but the whole stream takes longer.
	s := agenttest.NewServer(t, recording(t, "anthropic/stream_text_end_turn.sse").Pace(40*time.Millisecond))
	var aborted bool
	w := model.NewWatch(newProvider("anthropic", s.URL).(model.Streamer), 200*time.Millisecond, 250*time.Millisecond, func(st model.Step) {
		aborted = aborted || st.Action == model.ActionStallAbort
	})
	start := time.Now()
	got, err := w.Complete(context.Background(), plainRequest)
	if err != nil || got.Text != "Hello there!" {
		t.Fatalf("Complete = %+v, %v", got, err)
	}
	if aborted || len(s.Requests()) != 1 {
		t.Errorf("aborted = %v after %d requests, want the stream read to its end", aborted, len(s.Requests()))
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("the stream took %s, under the abort time: the test's premise does not hold", took)
	}
}

func TestAnErrorInsideTheStreamIsRetriedByRecovery(t *testing.T) {
	t.Parallel()
	s := agenttest.NewServer(t, recording(t, "anthropic/stream_midstream_overloaded_error.sse"),
		recording(t, "anthropic/stream_text_end_turn.sse"))
	var steps []model.Step
	rec := model.NewRecovery(model.NewWatch(newProvider("anthropic", s.URL).(model.Streamer), time.Second, 5*time.Second, nil),
		model.Policy{}, model.WithSleep(func(context.Context, time.Duration) error { return nil }),
		model.WithObserver(func(st model.Step) { steps = append(steps, st) }))
	got, err := rec.Complete(context.Background(), plainRequest)
	if err != nil || got.Text != "Hello there!" {
		t.Fatalf("Complete = %+v, %v", got, err)
	}
	if trace := model.Trace(steps); !strings.HasPrefix(trace, "retry(overloaded_error") || !strings.HasSuffix(trace, "-> ok") {
		t.Errorf("trace = %s, want a retry of the overloaded stream, then ok", trace)
	}
}

// TestStreamAndCompleteAgree serves each recorded message both ways, as JSON and as
// the event stream agenttest builds from it: the two replies are the same.
func TestStreamAndCompleteAgree(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"message_end_turn.json", "message_tool_use.json"} {
		t.Run(file, func(t *testing.T) {
			s := agenttest.NewServer(t, agenttest.File(t, filepath.Join("testdata", "anthropic", file), http.StatusOK))
			p := model.NewAnthropic(key, s.URL)
			plain, err := p.Complete(context.Background(), plainRequest)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := p.Stream(context.Background(), plainRequest, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plain, streamed) {
				t.Errorf("Complete = %+v\nStream   = %+v", plain, streamed)
			}
			if got := s.Requests(); len(got) != 2 || got[0].Streamed || !got[1].Streamed {
				t.Errorf("requests streamed = %+v, want plain then streamed", got)
			}
		})
	}
}

func TestWatchAsksAgainWhenTheServiceDoesNotStream(t *testing.T) {
	t.Parallel()
	// A server that ignores "stream": true and answers with the plain message.
	s := agenttest.NewServer(t, recording(t, "anthropic/message_end_turn.json").IgnoreStream())
	var steps []model.Step
	got, err := model.NewWatch(newProvider("anthropic", s.URL).(model.Streamer), time.Second, 5*time.Second,
		func(st model.Step) { steps = append(steps, st) }).Complete(context.Background(), plainRequest)
	if err != nil || got.Text != "The current temperature in San Francisco is 68 degrees Fahrenheit." {
		t.Fatalf("Complete = %+v, %v; want the plain reply, never an empty one", got, err)
	}
	if trace := model.Trace(steps); trace != "no_stream" {
		t.Errorf("trace = %q, want no_stream", trace)
	}
}

func TestAStreamCutBeforeItsEndIsAConnectionError(t *testing.T) {
	t.Parallel()
	// Every event up to message_delta: the blocks, never the end.
	s := agenttest.NewServer(t, recording(t, "anthropic/stream_text_end_turn.sse").CutAfter(7))
	_, err := newProvider("anthropic", s.URL).(model.Streamer).Stream(context.Background(), plainRequest, nil)
	if !errors.Is(err, model.ErrConnection) {
		t.Errorf("Stream of a cut stream = %v, want a connection error (retried, never an empty reply)", err)
	}
}

// The plain request after a stall is a request of the turn: it is paid from the
// turn's budget, and refused when the budget is spent.
func TestWatchPaysTheRetryFromTheTurnsBudget(t *testing.T) {
	t.Parallel()
	s := agenttest.NewServer(t, recording(t, "anthropic/stream_text_end_turn.sse").StallAfter(3, 0),
		recording(t, "anthropic/message_end_turn.json"))
	w := model.NewWatch(newProvider("anthropic", s.URL).(model.Streamer), 20*time.Millisecond, 150*time.Millisecond, nil)
	req := plainRequest
	req.Budget = model.NewBudget(0, time.Minute) // the stream itself was the turn's last request
	if _, err := w.Complete(context.Background(), req); !errors.Is(err, model.ErrTurnBudget) {
		t.Errorf("the retry after the stall = %v, want ErrTurnBudget", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("requests = %d, want only the stalled stream", n)
	}
}
