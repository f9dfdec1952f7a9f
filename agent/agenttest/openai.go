package agenttest

import "fmt"

// created is the time stamp of every completion this server makes, the one of the
// recorded ones.
const created = 1727346168

// openaiCompletion is m as a Chat Completions response.
func openaiCompletion(m message) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if m.text != "" || len(m.uses) == 0 {
		msg["content"] = m.text
	}
	if len(m.uses) > 0 {
		var calls []map[string]any
		for i, u := range m.uses {
			calls = append(calls, map[string]any{"id": toolCallID(m, u, i), "type": "function",
				"function": map[string]any{"name": u.Name, "arguments": orObject(u.Input)}})
		}
		msg["tool_calls"] = calls
	}
	return mustJSON(map[string]any{"id": m.id, "object": "chat.completion", "created": created, "model": m.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(m.stop)}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
}

// toolCallID is u's id, or the ith call's in this server's numbering: call_01,
// call_02 in a conversation's first reply, call_02_01 in its second, so that no
// two calls of a conversation share an id (Claude Code drops a result whose id
// it has seen).
func toolCallID(m message, u Use, i int) string {
	switch {
	case u.id != "":
		return u.id
	case m.turn > 1:
		return fmt.Sprintf("call_%02d_%02d", m.turn, i+1)
	}
	return fmt.Sprintf("call_%02d", i+1)
}

// openaiChunks is m as a Chat Completions stream, shaped like the recorded ones:
// a first delta with the role; text in content deltas; each tool call as a delta
// with its index, id, type, name and empty arguments, then argument fragments by
// index; a chunk with an empty delta and the finish reason; the usage chunk with
// no choices when the request asked for it; "data: [DONE]". Arguments cut at the
// output limit stop halfway.
func openaiChunks(m message, usage bool) [][]byte {
	var chunks [][]byte
	chunk := func(delta map[string]any, finish any) {
		chunks = append(chunks, fmt.Appendf(nil, "data: %s\n\n", mustJSON(map[string]any{"id": m.id,
			"object": "chat.completion.chunk", "created": created, "model": m.model, "system_fingerprint": "fp_agenttest",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}})))
	}
	first := map[string]any{"role": "assistant", "content": "", "refusal": nil}
	if m.text == "" && len(m.uses) > 0 {
		first["content"] = nil
	}
	chunk(first, nil)
	a, b := halves(m.text)
	for _, part := range []string{a, b} {
		if part != "" {
			chunk(map[string]any{"content": part}, nil)
		}
	}
	for i, u := range m.uses {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": toolCallID(m, u, i), "type": "function",
			"function": map[string]any{"name": u.Name, "arguments": ""}}}}, nil)
		a, b := halves(orObject(u.Input))
		parts := []string{a, b}
		if cutUse(m, i) {
			parts = parts[:1]
		}
		for _, p := range parts {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	chunk(map[string]any{}, finishReason(m.stop))
	if usage {
		chunks = append(chunks, fmt.Appendf(nil, "data: %s\n\n", mustJSON(map[string]any{"id": m.id,
			"object": "chat.completion.chunk", "created": created, "model": m.model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})))
	}
	return append(chunks, []byte("data: [DONE]\n\n"))
}
