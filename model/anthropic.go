package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

const providerAnthropic = "anthropic"

// Anthropic is the Messages API of Anthropic (or a server speaking it).
type Anthropic struct {
	client anthropic.Client
	key    string
	opts   options
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns a provider for the Messages API at baseURL ("" for the public
// API) with apiKey. It reads nothing from the environment and never retries on its
// own: one Complete is one HTTP request.
func NewAnthropic(apiKey, baseURL string, opts ...Option) *Anthropic {
	o := newOptions(opts)
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(o.client),
		option.WithMaxRetries(0),
		// An explicit timeout also lifts the SDK's refusal of large max_tokens
		// without streaming.
		option.WithRequestTimeout(o.timeout),
	}
	if apiKey != "" {
		ro = append(ro, option.WithAPIKey(apiKey))
	}
	if baseURL != "" {
		ro = append(ro, option.WithBaseURL(baseURL))
	}
	return &Anthropic{client: anthropic.NewClient(ro...), key: apiKey, opts: o}
}

// Complete sends one Messages request. See Provider for the errors.
func (a *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	msg, err := a.client.Messages.New(ctx, anthropicParams(req))
	if err != nil {
		return Response{}, a.mapError(ctx, err)
	}
	return anthropicResponse(msg), nil
}

func (a *Anthropic) mapError(ctx context.Context, err error) error {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return transportError(ctx, providerAnthropic, a.key, err)
	}
	h := headerOf(ae.Response)
	return (&APIError{
		Provider:    providerAnthropic,
		Status:      ae.StatusCode,
		Type:        string(ae.Type()),
		Code:        string(ae.ErrorCode()),
		Message:     redact(ae.Message, a.key),
		RequestID:   ae.RequestID,
		ShouldRetry: shouldRetry(h),
	}).retryAfterOf(h, a.opts.now())
}

func anthropicParams(req Request) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(req.MaxTokens),
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		p.Messages = append(p.Messages, anthropicMessage(m))
	}
	for _, t := range req.Tools {
		tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: t.Properties, Required: t.Required,
		}, t.Name)
		tool.OfTool.Description = anthropic.String(t.Description)
		p.Tools = append(p.Tools, tool)
	}
	return p
}

func anthropicMessage(m Message) anthropic.MessageParam {
	var blocks []anthropic.ContentBlockParamUnion
	for _, r := range m.ToolResults {
		blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Content, r.IsError))
	}
	if m.Text != "" {
		blocks = append(blocks, anthropic.NewTextBlock(m.Text))
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, rawObject(c.Input), c.Name))
	}
	if m.Role == RoleAssistant {
		return anthropic.NewAssistantMessage(blocks...)
	}
	return anthropic.NewUserMessage(blocks...)
}

// rawObject is the input as raw JSON, "{}" when empty, so the request stays valid.
func rawObject(in json.RawMessage) json.RawMessage {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func anthropicResponse(msg *anthropic.Message) Response {
	res := Response{Stop: StopReason(msg.StopReason), Model: string(msg.Model)}
	var text []string
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			res.ToolCalls = append(res.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Input: b.Input})
		}
	}
	res.Text = strings.Join(text, "")
	return res
}

// anthropicTooLong is one of the two places where a message text is read:
// Anthropic gives a prompt over the context window no code of its own, only an
// invalid_request_error whose message says so: "prompt is too long", or "input
// length and `max_tokens` exceed context limit" (the prompt fits, but not with
// the output limit asked for; shortening the prompt cures it as well).
func anthropicTooLong(e *APIError) bool {
	if e.Status != http.StatusBadRequest || e.Type != "invalid_request_error" {
		return false
	}
	msg := strings.ToLower(e.Message)
	return strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "exceed context limit")
}
