package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

const providerOpenAI = "openai"

// DefaultOpenAIBaseURL is where NewOpenAI sends requests when baseURL is "".
const DefaultOpenAIBaseURL = "https://api.openai.com/v1/"

// OpenAI is the Chat Completions API of OpenAI or of any server compatible with it
// (Ollama, llama.cpp, vLLM).
type OpenAI struct {
	chat openai.ChatCompletionService
	key  string
	opts options
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI returns a provider for the Chat Completions API at baseURL (""
// for DefaultOpenAIBaseURL). An empty apiKey sends no Authorization header, as a
// local server expects. It reads nothing from the environment and never retries on
// its own: one Complete is one HTTP request.
func NewOpenAI(apiKey, baseURL string, opts ...Option) *OpenAI {
	o := newOptions(opts)
	if baseURL == "" {
		baseURL = DefaultOpenAIBaseURL
	}
	// The chat service is built without openai.NewClient, which would read
	// OPENAI_API_KEY and send it to whatever server baseURL names.
	ro := []option.RequestOption{
		option.WithHTTPClient(o.client),
		option.WithBaseURL(baseURL),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(o.timeout),
	}
	if apiKey != "" {
		ro = append(ro, option.WithAPIKey(apiKey))
	}
	return &OpenAI{chat: openai.NewChatCompletionService(ro...), key: apiKey, opts: o}
}

// Complete sends one chat completion request. See Provider for the errors.
func (c *OpenAI) Complete(ctx context.Context, req Request) (Response, error) {
	res, err := c.chat.New(ctx, openaiParams(req))
	if err != nil {
		return Response{}, c.mapError(ctx, err)
	}
	return openaiResponse(res), nil
}

func (c *OpenAI) mapError(ctx context.Context, err error) error {
	var se *ssestream.StreamError
	if errors.As(err, &se) && ctx.Err() == nil {
		return c.streamError(se)
	}
	var oe *openai.Error
	if !errors.As(err, &oe) {
		return transportError(ctx, providerOpenAI, c.key, err)
	}
	h := headerOf(oe.Response)
	return (&APIError{
		Provider:    providerOpenAI,
		Status:      oe.StatusCode,
		Type:        oe.Type,
		Code:        oe.Code,
		Message:     redact(oe.Message, c.key),
		RequestID:   h.Get("x-request-id"),
		ShouldRetry: shouldRetry(h),
	}).retryAfterOf(h, c.opts.now())
}

// streamError maps an error object sent inside a stream that began with 200,
// which openai-go reports with neither status nor type (a *ssestream.StreamError
// holding the event), to an *APIError with Status 200 and the object's type and
// code, as the Anthropic provider reports an error event.
func (c *OpenAI) streamError(se *ssestream.StreamError) error {
	var ev struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(se.Event.Data, &ev); err != nil {
		return fmt.Errorf("%s: %s", providerOpenAI, redact(se.Error(), c.key))
	}
	return &APIError{
		Provider: providerOpenAI,
		Status:   http.StatusOK,
		Type:     ev.Error.Type,
		Code:     codeText(ev.Error.Code),
		Message:  redact(ev.Error.Message, c.key),
	}
}

// codeText is an error code as text: OpenAI sends a string or null; some
// compatible servers send the HTTP status as a number.
func codeText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func openaiParams(req Request) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if req.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: local servers read only the former.
		p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		p.Messages = append(p.Messages, openaiMessages(m)...)
	}
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": t.Properties}
		if len(t.Required) > 0 {
			schema["required"] = t.Required
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: param.NewOpt(t.Description), Parameters: schema,
		}))
	}
	return p
}

// openaiMessages turns one Message into chat messages: a tool message per result
// (then the text, as a user message), or one user or assistant message.
func openaiMessages(m Message) []openai.ChatCompletionMessageParamUnion {
	switch {
	case m.Role == RoleAssistant:
		return []openai.ChatCompletionMessageParamUnion{openaiAssistant(m)}
	case len(m.ToolResults) == 0:
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(m.Text)}
	}
	var out []openai.ChatCompletionMessageParamUnion
	for _, r := range m.ToolResults {
		content := r.Content
		if r.IsError {
			content = "error: " + content
		}
		out = append(out, openai.ToolMessage(content, r.CallID))
	}
	if m.Text != "" {
		out = append(out, openai.UserMessage(m.Text))
	}
	return out
}

func openaiAssistant(m Message) openai.ChatCompletionMessageParamUnion {
	a := openai.ChatCompletionAssistantMessageParam{}
	if m.Text != "" {
		a.Content.OfString = param.NewOpt(m.Text)
	}
	for _, c := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name: c.Name, Arguments: string(rawObject(c.Input)),
				},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// finishReasons translates OpenAI finish reasons into stop reasons.
var finishReasons = map[string]StopReason{
	"stop":           StopEndTurn,
	"length":         StopMaxTokens,
	"tool_calls":     StopToolUse,
	"function_call":  StopToolUse,
	"content_filter": StopRefusal,
}

func openaiResponse(res *openai.ChatCompletion) Response {
	out := Response{Model: res.Model}
	if len(res.Choices) == 0 {
		return out
	}
	ch := res.Choices[0]
	out.Stop = StopReason(ch.FinishReason)
	if s, ok := finishReasons[ch.FinishReason]; ok {
		out.Stop = s
	}
	out.Text = ch.Message.Content
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type == "function" {
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Input: []byte(tc.Function.Arguments)})
		}
	}
	return out
}

// openAITooLong recognises a prompt over the context window from OpenAI and the
// compatible servers (testdata/compatible): OpenAI's context_length_exceeded code,
// llama.cpp's exceed_context_size_error type, and vLLM's BadRequestError, which
// has no code and is read by its message, the other place a text is read. Their
// overloads (llama.cpp loading a model, Ollama's full queue) are 503s, which the
// status already says.
func openAITooLong(e *APIError) bool {
	switch {
	case e.Code == "context_length_exceeded", e.Type == "exceed_context_size_error":
		return true
	}
	return e.Status == http.StatusBadRequest && e.Type == "BadRequestError" &&
		strings.Contains(strings.ToLower(e.Message), "maximum context length")
}
