package clitest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/clitest"
)

// A run sees only the minimal environment and what the test adds, never the
// test's own (an API key set there stays there), and reads EOF from stdin.
func TestARunGetsOnlyItsOwnEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-the-real-one")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	home := t.TempDir()
	r := clitest.Run(t, ctx, clitest.Command{Bin: "/bin/sh", Args: []string{"-c", "cat; env"}, Home: home, Env: clitest.ClaudeEnv("http://127.0.0.1:9")})
	if r.ExitCode != 0 || r.Err != nil {
		t.Fatalf("sh: %s", r.Summary())
	}
	var names []string
	for _, kv := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		name, value, _ := strings.Cut(kv, "=")
		names = append(names, name)
		if strings.Contains(value, "real-one") || name == "HOME" && value != home {
			t.Errorf("%s", kv)
		}
	}
	slices.Sort(names)
	want := []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_RETRIES",
		"DISABLE_TELEMETRY", "ENABLE_TOOL_SEARCH", "HOME", "LANG", "PATH"}
	// the ones the shell itself sets
	names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains([]string{"_", "PWD", "OLDPWD", "SHLVL"}, n) })
	if !slices.Equal(names, want) {
		t.Errorf("environment %v, want %v", names, want)
	}
}

// Stop, a deadline and the end of the run each kill the whole process group:
// what the CLI started (here a sleep standing for an MCP server) goes with it.
func TestTheProcessGroupGoesWithTheRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(*clitest.Process, context.CancelFunc)
		code int
	}{
		{"stop", func(p *clitest.Process, _ context.CancelFunc) { p.Stop() }, -1},
		{"deadline", func(_ *clitest.Process, cancel context.CancelFunc) { cancel() }, -1},
		{"the CLI exits", func(p *clitest.Process, _ context.CancelFunc) {}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			script := `sleep 30 & echo "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"$!\"}"; ` +
				map[bool]string{true: "exit 0", false: "wait"}[tt.code == 0]
			p := clitest.Start(t, ctx, clitest.Command{Bin: "/bin/sh", Args: []string{"-c", script}})
			evs, err := p.WaitEvent(ctx, func(evs []clitest.Event) bool { return len(evs) == 1 })
			if err != nil {
				t.Fatalf("no event: %v", err)
			}
			child, _ := strconv.Atoi(evs[0].SessionID)
			tt.end(p, cancel)
			r := p.Wait()
			if r.ExitCode != tt.code {
				t.Errorf("exit %d, want %d: %s", r.ExitCode, tt.code, r.Summary())
			}
			if !gone(child, 5*time.Second) {
				t.Errorf("the child %d outlived the run", child)
			}
		})
	}
}

// gone reports whether process pid ends (or is a zombie: dead, not yet reaped
// by the init that adopted it) within d.
func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil && syscall.Kill(pid, 0) != nil {
			return true
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return true
		}
		time.Sleep(10 * time.Millisecond) // a signal's delivery is not observable otherwise
	}
	return false
}
