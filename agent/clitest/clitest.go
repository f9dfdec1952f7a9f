// Package clitest runs agent CLIs (Claude Code, Codex; the MCP Inspector)
// headless in tests, the way the bot will run them as providers: a binary
// installed from npm, a fresh HOME (and CODEX_HOME), a minimal environment that
// names only what the run needs (the model server's address, a test key, the
// switches that keep the CLI offline and its own retries off), stdin at
// /dev/null, and the whole process group killed at the end, so that no MCP
// server the CLI started outlives the test. Each CLI's JSON lines are read into
// typed events: Event for Claude Code's stream-json, CodexEvent for `codex exec
// --json`.
//
// It lives beside agent/agenttest, the model server these runs talk to, in the
// model layer where the agent-CLI providers go: their tests, and the end-to-end
// tests of cmd/bot, share it. Of ours it imports only the process-group helper
// the providers use (agent/internal/procgroup), and internal/skips for the
// wording of a skip.
//
// A binary that is not installed skips the test with a message naming the npm
// package and how .ci/run installs it, unless COUNTERSIGN_REQUIRE_CLIS=1 (set by
// .ci/run), which makes a missing binary a failure: CI must not pass by skipping.
package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/skips"
)

// Tool is an npm-installed command a test can run: where to look for it, and
// what to tell a person who does not have it.
type Tool struct {
	// Name is what a person calls it ("Claude Code CLI").
	Name string
	// Package is the npm package, pinned as .ci/run installs it.
	Package string
	// Env names the variable that gives the binary's path (set by .ci/run).
	Env string
	// Paths are the binary's places under an npm prefix's node_modules, first
	// the one to prefer.
	Paths []string
	// Command is its name on PATH, the last place looked.
	Command string
}

// The tools, as .ci/run installs them (keep the versions in step with it).
var (
	// ClaudeCode is the Claude Code CLI: its native binary, which the wrapper
	// package's postinstall would copy to bin/claude.exe; taking it from the
	// platform package works even where npm ran no install scripts.
	ClaudeCode = Tool{Name: "Claude Code CLI", Package: "@anthropic-ai/claude-code@2.1.328", Env: "COUNTERSIGN_CLAUDE",
		Paths:   []string{"@anthropic-ai/claude-code-linux-x64/claude", "@anthropic-ai/claude-code/bin/claude.exe"},
		Command: "claude"}
	// Inspector is the MCP Inspector's command-line client (a Node script).
	Inspector = Tool{Name: "MCP Inspector CLI", Package: "@modelcontextprotocol/inspector-cli@1.0.3", Env: "COUNTERSIGN_MCP_INSPECTOR",
		Paths:   []string{"@modelcontextprotocol/inspector-cli/build/cli.js"},
		Command: "mcp-inspector-cli"}
)

// RequireEnv, set to 1, makes a missing tool fail the test instead of skipping it.
const RequireEnv = "COUNTERSIGN_REQUIRE_CLIS"

// Find returns the path of tool's binary, looked for in this order: the path in
// $tool.Env (which must then exist), the npm cache folder .ci/run installs into
// (${XDG_CACHE_HOME:-$HOME/.cache}/countersign/npm), PATH. When it is in none, it
// skips t with a message saying how to install it (or fails it, see RequireEnv).
func Find(t testing.TB, tool Tool) string {
	t.Helper()
	path, err := tool.find()
	if err == nil {
		return path
	}
	msg := tool.missing(err)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(skips.Need("the "+tool.Name+" ("+tool.Env+")", msg)) // counted by go run ./internal/testrun
	return ""
}

// missing is what to tell a person who does not have tool.
func (tool Tool) missing(err error) string {
	return fmt.Sprintf("%s: %v; install npm package %s (.ci/run installs it into %s and sets %s), or set %s to its binary",
		tool.Name, err, tool.Package, NPMPrefix(), tool.Env, tool.Env)
}

func (tool Tool) find() (string, error) {
	if p := os.Getenv(tool.Env); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", tool.Env, p, err)
		}
		return p, nil
	}
	for _, rel := range tool.Paths {
		p := filepath.Join(NPMPrefix(), "node_modules", rel)
		if executable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(tool.Command); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("not found in $%s, %s or PATH", tool.Env, NPMPrefix())
}

// NPMPrefix is the folder .ci/run installs the tools into, outside the repository.
func NPMPrefix() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "countersign", "npm")
}

// executable reports why path is not a file a test can run (nil when it is).
func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
