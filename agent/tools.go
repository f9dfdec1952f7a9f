package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/vault"
)

// The Reviewer's tools. Both read, and both read only the target under review.
const (
	ToolReadOperations = "read_operations"
	ToolReadVault      = "read_vault"
)

func (r *Reviewer) tools() []model.ToolSpec {
	var specs []model.ToolSpec
	if r.ops != nil {
		specs = append(specs, model.ToolSpec{Name: ToolReadOperations, Properties: map[string]any{},
			Description: "Recent operations to the same target, newest first: id, tool, state, time and a short masked excerpt of the text."})
	}
	if r.envs != nil {
		specs = append(specs, model.ToolSpec{Name: ToolReadVault, Properties: map[string]any{},
			Description: "Earlier sends to the same target whose outcome is still unknown: operation id, tool, time and a short masked excerpt."})
	}
	return specs
}

// runTools answers every call in one tool message. An unknown tool is an error
// result the model sees; a reader that fails is an error of the review.
func (r *Reviewer) runTools(ctx context.Context, target string, calls []model.ToolCall) (model.Message, error) {
	msg := model.Message{Role: model.RoleTool}
	for _, c := range calls {
		var out any
		var err error
		switch {
		case c.Name == ToolReadOperations && r.ops != nil:
			out, err = r.ops.RecentOperations(ctx, target, RecentOperations)
		case c.Name == ToolReadVault && r.envs != nil:
			out, err = r.unresolved(target)
		default:
			msg.ToolResults = append(msg.ToolResults, model.ToolResult{CallID: c.ID, IsError: true,
				Content: fmt.Sprintf("unknown tool %q", c.Name)})
			continue
		}
		if err != nil {
			return model.Message{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		data, err := json.Marshal(out)
		if err != nil {
			return model.Message{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		msg.ToolResults = append(msg.ToolResults, model.ToolResult{CallID: c.ID, Content: string(data)})
	}
	return msg, nil
}

// envelopeInfo is what the model sees of one unresolved envelope.
type envelopeInfo struct {
	OperationID string    `json:"operation_id"`
	Tool        string    `json:"tool"`
	Status      string    `json:"status"`
	Created     time.Time `json:"created"`
	Excerpt     string    `json:"excerpt"`
}

func (r *Reviewer) unresolved(target string) ([]envelopeInfo, error) {
	notes, _, err := r.envs.List(vault.Filter{Unresolved: true, Target: target})
	if err != nil {
		return nil, err
	}
	infos := make([]envelopeInfo, 0, len(notes))
	for _, n := range notes {
		e := n.Envelope
		infos = append(infos, envelopeInfo{OperationID: e.OperationID, Tool: e.Tool,
			Status: string(e.Status), Created: e.Created, Excerpt: vault.Excerpt(e.Excerpt)})
	}
	return infos, nil
}
