package agent

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/model"
)

// TestCollapsingNeverReplacesAResultWithALongerNote keeps the promise that
// shortening makes the prompt smaller: a short tool result stays as it is.
func TestCollapsingNeverReplacesAResultWithALongerNote(t *testing.T) {
	long := strings.Repeat("x", 500)
	s := state{messages: []model.Message{
		{Role: model.RoleUser, Text: "go"},
		{Role: model.RoleTool, ToolResults: []model.ToolResult{{Content: "ok"}, {Content: long}}},
		{Role: model.RoleTool, ToolResults: []model.ToolResult{{Content: "last"}}},
	}}
	next, detail := s.afterCollapse()
	got := next.messages[1].ToolResults
	if got[0].Content != "ok" {
		t.Fatalf("short result replaced by %q", got[0].Content)
	}
	if len(got[1].Content) >= len(long) {
		t.Fatalf("long result not collapsed: %d characters", len(got[1].Content))
	}
	if !strings.Contains(detail, "1 tool results collapsed") {
		t.Fatalf("detail = %q, want one result collapsed", detail)
	}
}
