package model_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/model"
)

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		env       map[string]string
		wantKind  string
		wantModel string
		wantOK    bool
		wantErr   string
	}{
		{"nothing", nil, "", "", false, ""},
		{"anthropic default model", map[string]string{"ANTHROPIC_API_KEY": key}, "anthropic", model.DefaultAnthropicModel, true, ""},
		{"anthropic first", map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_MODEL": "claude-opus-4-1", "OPENAI_API_KEY": "sk-x"}, "anthropic", "claude-opus-4-1", true, ""},
		{"anthropic bad base url", map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": "localhost:8080"}, "", "", false, "ANTHROPIC_BASE_URL"},
		{"openai default model", map[string]string{"OPENAI_API_KEY": key}, "openai", model.DefaultOpenAIModel, true, ""},
		{"ollama without a key", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1/", "OPENAI_MODEL": "llama3.2"}, "openai", "llama3.2", true, ""},
		{"base url without a model", map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1/"}, "", "", false, "OPENAI_MODEL"},
		{"model alone", map[string]string{"OPENAI_MODEL": "gpt-4o"}, "", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, name, ok, err := model.FromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), key) {
					t.Fatalf("err: got %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.wantOK || name != tt.wantModel {
				t.Errorf("got %q ok=%v, want %q ok=%v", name, ok, tt.wantModel, tt.wantOK)
			}
			var kind string
			switch p.(type) {
			case *model.Anthropic:
				kind = "anthropic"
			case *model.OpenAI:
				kind = "openai"
			}
			if kind != tt.wantKind {
				t.Errorf("provider: got %T, want %s", p, tt.wantKind)
			}
		})
	}
}
