// Command loadbench measures the real `countersign run` under a sustained, seeded
// mix of work, twice in one run: three replicas on one PostgreSQL journal behind a
// webhook load balancer, then one process on SQLite, against the fake Bot API with
// Telegram's flood limits on.
//
//	go run ./internal/cmd/loadbench -duration 5m
//
// The mix, for the whole -duration: operators' /send commands from many private
// chats, each approved by a tap on its card (the harness sees the card on the
// fake server and posts the callback_query); MCP callers committing over HTTP to
// each process's -mcp-listen, most to chats an auto_approve rule covers, some
// tapped; and plain chat traffic (/whoami and /help from operators, strangers
// writing, group chatter the bot does not answer). Both configurations take
// their updates by webhook, through the same delivery of the fake server, so
// that the journal and the number of processes are all that differ.
//
// Per configuration it prints the updates taken and handled a second, the time
// from a tap's update leaving the fake server to the approved message reaching
// it (p50, p99), each process's memory (peak and end RSS, Go heap from
// /metrics) and CPU, the 429s, and the backlog per 10 s window (offered, taken,
// handled, waiting), to show the load was sustained rather than queued; then
// the cluster's figures against the single process's. It exits 1 when a message
// was delivered twice or an update was lost (taken by the bot and never
// handled, or a command without its effect), 2 when the run could not be made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(2)
	}
	if !rep.OK() {
		os.Exit(1)
	}
}

// defaultJournal is the PostgreSQL server of the cluster's run when
// COUNTERSIGN_DATABASE_URL names none: the local one the tests use.
const defaultJournal = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func parseFlags(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.DurationVar(&c.Duration, "duration", 5*time.Minute, "how long each configuration is under load; the drain comes after")
	fs.Float64Var(&c.Rate, "rate", 60, "updates a second the harness offers, taps not included (commands, strangers, group chatter)")
	fs.Float64Var(&c.Sends, "sends", 0.4, "operators' /send commands a second, of those offered, each approved by a tap")
	fs.Float64Var(&c.MCP, "mcp", 1.5, "MCP commits a second over HTTP; every 10th goes to a chat that needs a tap")
	fs.IntVar(&c.Replicas, "replicas", 3, "replicas of the cluster on PostgreSQL")
	fs.Int64Var(&c.Seed, "seed", 1, "the mix's random seed; the same seed offers the same mix")
	fs.StringVar(&c.Journal, "journal", envOr("COUNTERSIGN_DATABASE_URL", defaultJournal), "the cluster's PostgreSQL server: the run makes a schema of its own there and drops it after")
	fs.StringVar(&c.Policies, "policies", "policies.yaml", "the policy file to start from")
	fs.StringVar(&c.Bot, "bot", "", "the bot binary (default: built from ./cmd/bot)")
	fs.BoolVar(&c.Verbose, "v", false, "print each 10 s window as it passes")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	return c, c.validate()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
