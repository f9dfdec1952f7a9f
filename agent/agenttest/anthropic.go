package agenttest

import (
	"encoding/json"
	"fmt"
)

// anthropicMessage is m as a Messages API message.
func anthropicMessage(m message) []byte {
	content := []map[string]any{}
	if m.text != "" {
		content = append(content, map[string]any{"type": "text", "text": m.text})
	}
	for i, u := range m.uses {
		content = append(content, map[string]any{"type": "tool_use", "id": toolUseID(m, u, i),
			"name": u.Name, "input": json.RawMessage(orObject(u.Input))})
	}
	return mustJSON(map[string]any{"id": m.id, "type": "message", "role": "assistant",
		"model": m.model, "content": content, "stop_reason": m.stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}})
}

// orObject is input, or an empty object when there is none.
func orObject(input string) string {
	if input == "" {
		return "{}"
	}
	return input
}

// toolUseID is u's id, or the ith call's in this server's numbering: toolu_01,
// toolu_02 in a conversation's first reply, toolu_02_01 in its second, so that no
// two calls of a conversation share an id (Claude Code drops a result whose id
// it has seen).
func toolUseID(m message, u Use, i int) string {
	switch {
	case u.id != "":
		return u.id
	case m.turn > 1:
		return fmt.Sprintf("toolu_%02d_%02d", m.turn, i+1)
	}
	return fmt.Sprintf("toolu_%02d", i+1)
}

// anthropicEvents is m as the Messages API streams it: message_start; for each
// content block a start, deltas and a stop (a ping after the first start, as in
// the recorded streams); message_delta with the stop reason; message_stop. A tool
// input cut at max_tokens gets half its JSON and no stop, as recorded.
func anthropicEvents(m message) [][]byte {
	var events [][]byte
	event := func(name string, data map[string]any) {
		data["type"] = name
		events = append(events, fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, mustJSON(data)))
	}
	event("message_start", map[string]any{"message": map[string]any{"id": m.id, "type": "message", "role": "assistant",
		"content": []any{}, "model": m.model, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}})
	block := 0
	start := func(cb map[string]any) {
		event("content_block_start", map[string]any{"index": block, "content_block": cb})
		if block == 0 {
			events = append(events, ping(Anthropic))
		}
	}
	delta := func(d map[string]any) { event("content_block_delta", map[string]any{"index": block, "delta": d}) }
	if m.text != "" {
		start(map[string]any{"type": "text", "text": ""})
		a, b := halves(m.text)
		for _, part := range []string{a, b} {
			if part != "" {
				delta(map[string]any{"type": "text_delta", "text": part})
			}
		}
		event("content_block_stop", map[string]any{"index": block})
		block++
	}
	for i, u := range m.uses {
		start(map[string]any{"type": "tool_use", "id": toolUseID(m, u, i), "name": u.Name, "input": map[string]any{}})
		a, b := halves(orObject(u.Input))
		delta(map[string]any{"type": "input_json_delta", "partial_json": ""})
		delta(map[string]any{"type": "input_json_delta", "partial_json": a})
		if cutUse(m, i) {
			break
		}
		delta(map[string]any{"type": "input_json_delta", "partial_json": b})
		event("content_block_stop", map[string]any{"index": block})
		block++
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": m.stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{})
	return events
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
