package agenttest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// responsesItem is an item of a Responses API request's input, as far as this
// server reads it: messages (by role), the assistant's function calls, and the
// outputs sent back for them.
type responsesItem struct {
	Type   string          `json:"type"`
	Role   string          `json:"role"`
	CallID string          `json:"call_id"`
	Output json.RawMessage `json:"output"`
}

// responsesTool is a tool a Responses request offers: a function, or a
// namespace of functions (Codex offers an MCP server's tools as the namespace
// mcp__<server>, and the model calls one by its name and the namespace).
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

// readResponses fills req from a Responses API body: its messages (developer
// ones not counted), its tool outputs, its turn, and its tools by their flat
// names, namespace__name, as Claude Code names MCP tools, so that one script
// calls a tool of either CLI by the same name.
func readResponses(req *Request, input []responsesItem, tools []responsesTool) {
	assistant := false // inside a run of the assistant's items: one turn
	for _, it := range input {
		mine := it.Role == "assistant" || it.Type == "function_call" || it.Type == "reasoning"
		if mine && !assistant {
			req.turn++
		}
		assistant = mine
		switch {
		case it.Type == "function_call_output":
			req.Results = append(req.Results, ToolResult{UseID: it.CallID, Content: contentText(it.Output)})
		case (it.Type == "message" || it.Type == "") && it.Role != "system" && it.Role != "developer":
			req.Messages++
		}
	}
	for _, t := range tools {
		if t.Type != "namespace" {
			req.Tools = append(req.Tools, t.Name)
			continue
		}
		for _, f := range t.Tools {
			flat := t.Name + "__" + f.Name
			req.Tools = append(req.Tools, flat)
			if req.namespaces == nil {
				req.namespaces = map[string][2]string{}
			}
			req.namespaces[flat] = [2]string{t.Name, f.Name}
		}
	}
}

// responsesOutput is m's output items, in the Responses API's words: a message
// with its text, then a function_call per tool call, its arguments a JSON
// string. A call whose name is a namespaced tool of the request's goes as that
// tool's name with its namespace.
func responsesOutput(req Request, m message) []map[string]any {
	var out []map[string]any
	if m.text != "" || len(m.uses) == 0 {
		out = append(out, map[string]any{"type": "message", "id": fmt.Sprintf("msg_agenttest_%02d", req.N), "status": "completed",
			"role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": m.text, "annotations": []any{}}}})
	}
	for i, u := range m.uses {
		call := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_agenttest_%02d_%02d", req.N, i+1), "status": "completed",
			"call_id": toolCallID(m, u, i), "name": u.Name, "arguments": orObject(u.Input)}
		if ns, ok := req.namespaces[u.Name]; ok {
			call["namespace"], call["name"] = ns[0], ns[1]
		}
		out = append(out, call)
	}
	return out
}

// responsesObject is the response object that carries out: completed, or
// incomplete at the output limit.
func responsesObject(m message, out []map[string]any) map[string]any {
	status, incomplete := "completed", any(nil)
	if m.stop == "max_tokens" {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	if out == nil {
		out = []map[string]any{}
	}
	return map[string]any{"id": m.id, "object": "response", "created_at": created, "status": status, "model": m.model,
		"output": out, "error": nil, "incomplete_details": incomplete,
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}
}

// responsesPlain is m as a Responses API response that does not stream.
func responsesPlain(req Request, m message) []byte {
	return mustJSON(responsesObject(m, responsesOutput(req, m)))
}

// responsesEvents is m as the Responses API streams it, as Codex reads it:
// response.created; per output item, response.output_item.added (a message
// empty, a function call with empty arguments), its deltas (the text in two
// output_text deltas, the arguments in two function_call_arguments deltas) and
// response.output_item.done with the whole item; then response.completed with
// the usage (response.incomplete at the output limit). Every event carries its
// sequence_number.
func responsesEvents(req Request, m message) [][]byte {
	var events [][]byte
	event := func(name string, data map[string]any) {
		data["type"], data["sequence_number"] = name, len(events)
		events = append(events, fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, mustJSON(data)))
	}
	event("response.created", map[string]any{"response": withStatus(responsesObject(m, nil), "in_progress")})
	out := responsesOutput(req, m)
	for i, item := range out {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		texts := []string{}
		if item["type"] == "message" {
			added["content"] = []any{}
			a, b := halves(m.text)
			texts = []string{a, b}
		} else {
			added["arguments"] = ""
			a, b := halves(item["arguments"].(string))
			texts = []string{a, b}
		}
		event("response.output_item.added", map[string]any{"output_index": i, "item": added})
		for _, part := range texts {
			if part == "" {
				continue
			}
			if item["type"] == "message" {
				event("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": part})
			} else {
				event("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": part})
			}
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	final := responsesObject(m, out)
	if final["status"] == "incomplete" {
		event("response.incomplete", map[string]any{"response": final})
	} else {
		event("response.completed", map[string]any{"response": final})
	}
	return events
}

func withStatus(resp map[string]any, status string) map[string]any {
	resp["status"], resp["usage"] = status, nil
	return resp
}

// responsesFailEvent is the failure w inside a Responses stream: the event
// response.failed, whose response carries the error's code and message, as the
// API sends it (a recorded one is in Codex's own tests of its stream reader).
func responsesFailEvent(id string, w failureWire) []byte {
	var body struct {
		Error struct {
			Code, Type, Message string
		}
	}
	json.Unmarshal(w.body, &body)
	code := body.Error.Code
	if code == "" {
		code = body.Error.Type
	}
	data := mustJSON(map[string]any{"type": "response.failed", "sequence_number": 1, "response": map[string]any{"id": id,
		"object": "response", "created_at": created, "status": "failed", "background": false,
		"error": map[string]any{"code": code, "message": body.Error.Message}, "usage": nil, "metadata": map[string]any{}}})
	return fmt.Appendf(nil, "event: response.failed\ndata: %s\n\n", data)
}

// isResponsesPath reports whether path is the Responses API's: /v1/responses,
// or /responses under a base URL without /v1.
func isResponsesPath(path string) bool {
	return strings.HasSuffix(path, "/responses")
}
