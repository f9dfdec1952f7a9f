package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/clitest"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The files the recipe "an agent drafts, you approve" lives in.
const (
	unitFile  = "../../deploy/systemd/countersign.service"
	dropInMCP = "../../deploy/systemd/mcp.conf"
	// recipePort is the listener's port as the recipe writes it.
	recipePort = "8765"
)

// recipe is the recipe's block of shell lines, read from docs/deploy.md after
// checking that docs/agents.md gives the same one.
func recipe(t *testing.T) []string {
	t.Helper()
	var blocks []string
	for _, doc := range []string{"../../docs/deploy.md", "../../docs/agents.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), "<!-- recipe: an agent drafts, you approve")
		block, _, closed := strings.Cut(rest, "<!-- /recipe -->")
		if !ok || !closed {
			t.Fatalf("%s has no recipe block \"an agent drafts, you approve\"", doc)
		}
		blocks = append(blocks, block)
	}
	if blocks[0] != blocks[1] {
		t.Fatalf("docs/deploy.md and docs/agents.md give two recipes:\n%s\n---\n%s", blocks[0], blocks[1])
	}
	return strings.Split(blocks[0], "\n")
}

// recipeLine is the recipe's line that starts with prefix.
func recipeLine(t *testing.T, lines []string, prefix string) string {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("the recipe has no line %q…", prefix)
	return ""
}

// unitSettings are a systemd unit file's settings, key to values in order.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = append(keys[k], v)
		}
	}
	return keys
}

// The recipe, run as written against the service's layout: the drop-in's
// ExecStart (the unit's, with the MCP listener), the token the recipe puts in
// the unit's environment file, and the agent's own `mcp add` line from the
// docs. The agent, with nothing else configured, sends through the bot; the
// card reaches the approver, a tap sends it once.
func TestTheAgentRecipeRunsAgainstTheService(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	lines := recipe(t)
	unit, dropIn := unitSettings(t, unitFile), unitSettings(t, dropInMCP)
	if l := recipeLine(t, lines, "sudo install -D -m 0644 deploy/systemd/mcp.conf "); !strings.HasSuffix(l, "/etc/systemd/system/countersign.service.d/mcp.conf") {
		t.Errorf("the recipe installs the drop-in as %q, not beside countersign.service", l)
	}
	envFile := unit["EnvironmentFile"][0]
	if l := recipeLine(t, lines, `echo "COUNTERSIGN_MCP_TOKEN=`); !strings.Contains(l, "sudo tee -a "+envFile) {
		t.Errorf("the recipe writes the token with %q, not into the unit's %s", l, envFile)
	}
	// The drop-in clears the unit's ExecStart and gives it again, with the listener.
	execs := dropIn["ExecStart"]
	if len(execs) != 2 || execs[0] != "" {
		t.Fatalf("the drop-in's ExecStart = %q, want it cleared, then set", execs)
	}
	base, full := strings.Fields(unit["ExecStart"][0]), strings.Fields(execs[1])
	if len(full) <= len(base) || !slices.Equal(full[:len(base)], base) {
		t.Fatalf("the drop-in's ExecStart %q is not the unit's %q with more flags", full, base)
	}
	extra := full[len(base):]
	if !slices.Equal(extra, []string{"-mcp-listen", "127.0.0.1:" + recipePort}) {
		t.Fatalf("the drop-in adds %q, want the listener on loopback at %s", extra, recipePort)
	}

	for _, agent := range []struct {
		name, line string
		run        func(t *testing.T, home, model, token string) (opID string)
	}{
		{"claude-code", "claude mcp add ", recipeClaude},
		{"codex", "codex mcp add ", recipeCodex},
	} {
		t.Run(agent.name, func(t *testing.T) {
			port := freePort(t)
			token := randomToken(t)
			srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
			data, logs, wait := childData(t, srv)
			bot := startBotWith(t, srv, data, []string{"COUNTERSIGN_MCP_TOKEN=" + token}, "-mcp-listen", "127.0.0.1:"+port)
			wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })

			// The agent's line from the docs, the tunnel's port being the listener's.
			home := t.TempDir()
			add := strings.ReplaceAll(recipeLine(t, lines, agent.line), recipePort, port)
			runRecipeLine(t, add, home, token)

			const text = "hello from the recipe"
			model := agenttest.NewServerFunc(t, sendThenAwait("222", text))
			done := make(chan string, 1)
			go func() { done <- agent.run(t, home, model.URL, token) }()
			card := approveCard(srv, wait)
			opID := <-done
			if !strings.Contains(card.Text, text) || opID == "" || !strings.Contains(card.Text, opID) ||
				!regexp.MustCompile(`\nAsked by: MCP session of \S+ \(session \w+\)\n`).MatchString(card.Text) {
				t.Fatalf("card %q, operation %q: want the card of the agent's send\nbot log:\n%s", card.Text, opID, logs())
			}
			deliveredOnce(t, srv, bot, data, logs, wait, opID, text)
		})
	}
}

// runRecipeLine runs one line of the recipe with sh, as the person at the
// laptop would, the agent CLIs on PATH as claude and codex, and the token in
// the shell.
func runRecipeLine(t *testing.T, line, home, token string) {
	t.Helper()
	bin := t.TempDir()
	for name, tool := range map[string]clitest.Tool{"claude": clitest.ClaudeCode, "codex": clitest.Codex} {
		if err := os.Symlink(clitest.Find(t, tool), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	// Codex's own folder, ~/.codex, as a person who uses it has one.
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Dir = home
	env := clitest.Env(home, "COUNTERSIGN_MCP_TOKEN="+token)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + bin + ":" + v
		}
	}
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
}

// recipeClaude runs Claude Code headless in the folder the recipe's line ran
// in, with the tools allowed as the docs say and no MCP config of the test's:
// the server is the one `claude mcp add` recorded.
func recipeClaude(t *testing.T, home, model, token string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := clitest.Start(t, ctx, clitest.Command{Bin: clitest.Find(t, clitest.ClaudeCode), Home: home, Dir: home,
		Env: clitest.ClaudeEnv(model), Args: []string{"-p", "Send hello to chat 222.", "--output-format", "stream-json",
			"--verbose", "--allowedTools", "mcp__countersign"}}).Wait()
	results := r.ToolResults()
	if !r.Succeeded() || len(results) == 0 {
		t.Errorf("claude: %s", r.Summary())
		return ""
	}
	return readResult(results[0].ResultText()).OperationID
}

// recipeCodex runs Codex headless with the model provider of the test's
// CODEX_HOME and the server `codex mcp add` recorded there, its tools allowed
// as the docs say for codex exec.
func recipeCodex(t *testing.T, home, model, token string) string {
	codexHome := filepath.Join(home, ".codex")
	config, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		t.Error(err)
		return ""
	}
	// The model provider first: the server's table, as the line wrote it, after.
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(clitest.CodexConfig(model)+"\n"+string(config)), 0o600); err != nil {
		t.Error(err)
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"exec", "-c", `mcp_servers.countersign.default_tools_approval_mode="approve"`, "--json", "--skip-git-repo-check", "Send hello to chat 222."}
	r := clitest.Run(t, ctx, clitest.Command{Bin: clitest.Find(t, clitest.Codex), Home: home, Dir: home,
		Env: append(clitest.CodexEnv(codexHome), "COUNTERSIGN_MCP_TOKEN="+token), Args: args}).Codex()
	calls := r.ToolCalls()
	if !r.Succeeded() || len(calls) == 0 || calls[0].Result == nil {
		t.Errorf("codex: %s", r.Summary())
		return ""
	}
	var res toolResult
	json.Unmarshal(calls[0].Result.StructuredContent, &res)
	return res.OperationID
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// randomToken is a token as the recipe makes one (openssl rand -hex 32).
func randomToken(t *testing.T) string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
