package main

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// The secrets of a run: a bot token the fake server accepts, the webhook's
// secret and the MCP bearer token, the same for every process.
const (
	token         = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	webhookSecret = "loadbench-webhook-5d1c0e7a93f2b864"
	mcpToken      = "loadbench-mcp-2a6f0c19d8e34b75"
	// hookURL is what the processes register; the fake server posts to the
	// balancer's pick instead, as a load balancer in front of them would.
	hookURL = "https://hook.loadbench.test/telegram"
)

// proc is one `countersign run` process of a configuration.
type proc struct {
	name    string // r1, r2, ...
	data    string // its own data folder
	hook    string // its webhook listener
	metrics string // its -metrics-listen
	mcp     string // its -mcp-listen
	log     *os.File
	cmd     *exec.Cmd
	exit    chan error
}

// freeAddr is a free loopback address for a listener of a child process.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// newProc makes (does not start) process name of a configuration in dir.
func newProc(dir, name string) (*proc, error) {
	p := &proc{name: name, data: filepath.Join(dir, name)}
	for _, a := range []*string{&p.hook, &p.metrics, &p.mcp} {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		*a = addr
	}
	var err error
	if p.log, err = os.Create(filepath.Join(dir, name+".log")); err != nil {
		return nil, fmt.Errorf("the log of %s: %w", name, err)
	}
	return p, nil
}

// start runs p against srv: on the PostgreSQL journal pg as a named replica with
// the shared vault, or, with pg empty, on a SQLite journal in its data folder.
func (p *proc) start(bot, policies string, srv *telegramtest.Server, pg, vault string, operators, approvers []int64) error {
	args := []string{"run", "-data", p.data, "-policies", policies, "-webhook-listen", p.hook, "-webhook-url", hookURL,
		"-metrics-listen", p.metrics, "-mcp-listen", p.mcp, "-log-level", "debug"} // debug: each tap's steps (stages.go)
	if pg != "" {
		args = append(args, "-journal", pg, "-vault", vault, "-replica", p.name)
	}
	p.cmd = exec.Command(bot, args...)
	// The journal is named by flags only: a URL in the bench's own environment
	// must not put the SQLite process on PostgreSQL.
	p.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "COUNTERSIGN_DATABASE_URL=") || strings.HasPrefix(kv, "COUNTERSIGN_REPLICA=")
	})
	p.cmd.Env = append(p.cmd.Env, "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_URL="+srv.ClientURL(p.name),
		"TELEGRAM_WEBHOOK_SECRET="+webhookSecret, "COUNTERSIGN_MCP_TOKEN="+mcpToken,
		"BOT_OPERATORS="+ids(operators), "BOT_APPROVERS="+ids(approvers))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.exit = make(chan error, 1)
	go func(c *exec.Cmd) { p.exit <- c.Wait() }(p.cmd)
	return nil
}

func ids(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// ready waits until p answers /readyz on its metrics listener (its journal
// answers) and its webhook listener accepts connections, or p exits, or d passes.
// Nothing announces readiness across processes: it is asked.
func (p *proc) ready(d time.Duration) error {
	deadline := time.Now().Add(d)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-p.exit:
			p.exit <- err
			return fmt.Errorf("%s exited before it was ready: %v%s", p.name, err, logTail(p.log))
		default:
		}
		if resp, err := client.Get("http://" + p.metrics + "/readyz"); err == nil {
			resp.Body.Close()
			if c, err := net.DialTimeout("tcp", p.hook, time.Second); resp.StatusCode == http.StatusOK && err == nil {
				c.Close()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was not ready within %s%s", p.name, d, logTail(p.log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends p with SIGTERM and waits for it (SIGKILL after a minute).
func (p *proc) stop() error {
	if p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exit:
		p.exit <- err
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		return nil
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop within a minute of SIGTERM", p.name)
	}
}

// logTail is the end of a process's log, for an error that says why it failed.
func logTail(f *os.File) string {
	b, err := os.ReadFile(f.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return "; its log ends:\n" + string(b)
}

// balancer is the load balancer in front of the processes' webhooks: each
// update goes to one of them, drawn at random (seeded), as round robin would
// spread them; no stickiness.
type balancer struct {
	client *http.Client
	mu     sync.Mutex
	rnd    *mrand.Rand
	procs  []*proc
}

func newBalancer(seed int64, procs []*proc) *balancer {
	return &balancer{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}},
		rnd: mrand.New(mrand.NewPCG(uint64(seed), 0xba1)), procs: procs}
}

// deliver is the fake server's webhook delivery, through the balancer.
func (b *balancer) deliver(ctx context.Context, update []byte, secret string) error {
	b.mu.Lock()
	p := b.procs[b.rnd.IntN(len(b.procs))]
	b.mu.Unlock()
	return telegramtest.PostWebhook(b.client, func() (string, error) { return "http://" + p.hook + "/telegram", nil })(ctx, update, secret)
}
