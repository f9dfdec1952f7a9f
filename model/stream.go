package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/countersign/countersign/policy"
)

// Streamer is a Provider that can also stream: the reply arrives in events as the
// model writes it, so a request that has stalled can be told from one that is slow.
type Streamer interface {
	Provider
	// Stream makes the request Complete makes, streamed, and returns the whole
	// reply. alive is called whenever bytes arrive from the service (pings
	// included). There is no request timeout: ctx, or a Watch, bounds it. Errors
	// are those of Complete; an error event inside the stream is an *APIError with
	// Status 200.
	Stream(ctx context.Context, req Request, alive func()) (Response, error)
}

var (
	_ Streamer = (*Anthropic)(nil)
	_ Streamer = (*OpenAI)(nil)
)

// Stream implements Streamer.
func (a *Anthropic) Stream(ctx context.Context, req Request, alive func()) (Response, error) {
	ctx = withAlive(ctx, alive)
	// No request timeout: a stream may rightly run long; silence is the Watch's to judge.
	stream := a.client.Messages.NewStreaming(ctx, anthropicParams(req), anthropicopt.WithRequestTimeout(0))
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return Response{}, fmt.Errorf("%s: stream: %s", providerAnthropic, redact(err.Error(), a.key))
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, a.mapError(ctx, err)
	}
	if err := streamEnd(providerAnthropic, msg.ID != "", msg.StopReason != ""); err != nil {
		return Response{}, err
	}
	return anthropicResponse(&msg), nil
}

// Stream implements Streamer.
func (c *OpenAI) Stream(ctx context.Context, req Request, alive func()) (Response, error) {
	ctx = withAlive(ctx, alive)
	stream := c.chat.NewStreaming(ctx, openaiParams(req), openaiopt.WithRequestTimeout(0))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		return Response{}, c.mapError(ctx, err)
	}
	cc := acc.ChatCompletion
	if err := streamEnd(providerOpenAI, cc.ID != "" || len(cc.Choices) > 0, len(cc.Choices) > 0 && cc.Choices[0].FinishReason != ""); err != nil {
		return Response{}, err
	}
	return openaiResponse(&cc), nil
}

// ErrNotAStream is returned by Stream when the service answered with no event of a
// stream at all (a server that ignores "stream": true). Watch then asks again
// without streaming.
var ErrNotAStream = errors.New("agent: the answer was not a stream")

// streamEnd checks that a stream began and finished: one that began but stopped
// before its end is a *ConnectionError (cut), to be retried, never an empty reply.
func streamEnd(provider string, began, finished bool) error {
	switch {
	case !began:
		return fmt.Errorf("%s: %w", provider, ErrNotAStream)
	case !finished:
		return &ConnectionError{Provider: provider, Detail: "the stream ended before the reply did"}
	}
	return nil
}

// aliveKey carries, in a request's context, the function to call on every read of
// its response body.
type aliveKey struct{}

func withAlive(ctx context.Context, alive func()) context.Context {
	if alive == nil {
		return ctx
	}
	return context.WithValue(ctx, aliveKey{}, alive)
}

// aliveTransport reports reads of a response body to the request's alive function,
// so that silence is measured on the wire, below the SDK's event decoding (which
// drops pings).
type aliveTransport struct{ base http.RoundTripper }

func (t aliveTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if alive, ok := r.Context().Value(aliveKey{}).(func()); ok && resp != nil {
		alive()
		resp.Body = aliveBody{ReadCloser: resp.Body, alive: alive}
	}
	return resp, err
}

type aliveBody struct {
	io.ReadCloser
	alive func()
}

func (b aliveBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.alive()
	}
	return n, err
}

// watching returns c with its transport reporting reads to alive functions.
func watching(c *http.Client) *http.Client {
	w := *c
	base := w.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	w.Transport = aliveTransport{base: base}
	return &w
}

// The stall watch's actions, recorded as Steps.
const (
	ActionStallWarning Action = "stall_warning" // no bytes for the warning time
	ActionStallAbort   Action = "stall_abort"   // no bytes for the abort time: asked again without streaming
	ActionNoStream     Action = "no_stream"     // the service does not stream: asked again without streaming
)

// The silences after which NewWatch's callers usually warn and abort: a model
// answering at all sends its first bytes within seconds, and pings keep a long
// answer audible.
var (
	DefaultStallWarning = policy.DefaultModel().StallWarning
	DefaultStallAbort   = policy.DefaultModel().StallAbort
)

// Watch is a Provider that streams every request and watches the stream: after
// warn of silence it records a warning; after abort of silence it cancels the
// stream and makes the same request once without streaming. A reply that keeps
// coming, however slowly, is never cut. Wrap it in a Recovery, which then retries
// what the watched request returns.
type Watch struct {
	streamer    Streamer
	warn, abort time.Duration
	observe     func(Step)
}

var _ Provider = (*Watch)(nil)

// NewWatch watches s with the two silences (abort > warn > 0). observe, when not
// nil, hears the stall steps.
func NewWatch(s Streamer, warn, abort time.Duration, observe func(Step)) *Watch {
	if observe == nil {
		observe = func(Step) {}
	}
	return &Watch{streamer: s, warn: warn, abort: abort, observe: observe}
}

// Complete implements Provider. A request that travels with its own policy
// (Request.Retry) is watched with that policy's silences.
func (w *Watch) Complete(ctx context.Context, req Request) (Response, error) {
	warn, abort := w.warn, w.abort
	if req.Retry != nil && req.Retry.StallWarning > 0 && req.Retry.StallAbort > req.Retry.StallWarning {
		warn, abort = req.Retry.StallWarning, req.Retry.StallAbort
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	last := time.Now()
	alive := func() {
		mu.Lock()
		last = time.Now()
		mu.Unlock()
	}
	silence := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Since(last)
	}
	stalled := make(chan time.Duration, 1)
	done := make(chan struct{})
	go func() {
		warned := func(s time.Duration) {
			w.observe(Step{Model: req.Model, Action: ActionStallWarning, Cause: "stream", Wait: s.Round(time.Millisecond)})
		}
		if s, ok := WatchSilence(done, silence, warn, abort, warned); ok {
			stalled <- s
			cancel()
		}
	}()
	res, err := w.streamer.Stream(sctx, req, alive)
	close(done)
	if errors.Is(err, ErrNotAStream) {
		w.observe(Step{Model: req.Model, Action: ActionNoStream, Cause: "stream"})
		return w.again(ctx, req)
	}
	select {
	case s := <-stalled:
		if ctx.Err() != nil {
			return Response{}, err
		}
		w.observe(Step{Model: req.Model, Action: ActionStallAbort, Cause: "stream", Wait: s.Round(time.Millisecond)})
		return w.again(ctx, req)
	default:
		return res, err
	}
}

// WatchSilence watches silence() until done is closed or the silence reaches
// abort, calling warned once each time it passes warn (also when a late tick
// finds abort passed). It returns the silence at abort, with ok true; ok false
// when done closed first. Watch and the agent CLIs' stall watch both use it.
func WatchSilence(done <-chan struct{}, silence func() time.Duration, warn, abort time.Duration, warned func(time.Duration)) (time.Duration, bool) {
	tick := time.NewTicker(max(time.Millisecond, min(warn, abort)/8))
	defer tick.Stop()
	warnedOnce := false
	for {
		select {
		case <-done:
			return 0, false
		case <-tick.C:
		}
		s := silence()
		if s >= warn && !warnedOnce {
			warnedOnce = true
			warned(s)
		}
		if s >= abort {
			return s, true
		}
		if s < warn {
			warnedOnce = false
		}
	}
}

// again makes the request once more without streaming; it is one more request
// of the turn, paid from the turn's budget when the request carries one.
func (w *Watch) again(ctx context.Context, req Request) (Response, error) {
	if req.Budget != nil && !req.Budget.Take() {
		return Response{}, ErrTurnBudget
	}
	return w.streamer.Complete(ctx, req)
}
