// Command chaos runs the real bot binary against the fake Bot API under a seeded
// random schedule of everything that goes wrong in production at once (429s, 5xx,
// connections dropped before and after Telegram accepted a message, slow and hung
// answers, updates delivered twice, double taps, strangers, approvals left to
// expire, /resolve and /retry from the phone, countersign ops and countersign vault beside the bot,
// and SIGKILL followed by a restart, many times), with some of the sends made by
// model turns and some by outside agents over MCP (countersign mcp over stdio beside the
// bot, and HTTP to its -mcp-listen), and a share of the calls (-actions) photos,
// albums, edits, deletes, pins and declared HTTP tools against a fake service,
// then checks the promises:
//
//   - no operation delivered twice;
//   - nothing delivered without an approval or an auto-approve rule;
//   - nothing committed that was not delivered, nothing delivered that the journal
//     does not know as committed or unknown;
//   - every operation ended, or is unknown with an envelope; none left committing;
//   - every command Telegram handed over was taken exactly once;
//   - the journal and the vault agree; no secret in any file or log line;
//   - every MCP operation is journaled (surface mcp, transport telegram), and
//     what the MCP tools reported, the journal and Telegram bear out; every
//     caller learned each of its operations' outcome, or that it is unknown;
//   - nothing additive delivered twice, one effect per Idempotency-Key, every
//     state-setting unknown settled by the system (or left to a person after
//     the repeat failed too), each changed message as the journal says, and the
//     HTTP header secret in no file, log line, card or Bot API call;
//   - no commit to the step-up chat without votes given with a TOTP code, and no
//     used code given again approving what it was given for.
//
// It prints the seed, the counts per fault and per end state and each invariant,
// and exits 1 when one is broken.
//
// With -replicas 3 and -journal postgres://…, three `countersign run` replicas share one
// PostgreSQL journal (a fresh schema per run) and one vault, and take updates by
// webhook: the fake Telegram posts each update through a load balancer to a
// random live replica, delivers again after a failure, and at times twice; the
// kills take one replica down, or two at once, never all. Each replica serves
// MCP on a -mcp-listen of its own, and each HTTP caller follows one replica and
// moves on to the next when it dies (mcpreplicas.go). Now and then a replica
// is cut off the database (-partitions) and, with -own-postgres, the run's own
// server is restarted (-pg-restarts).
//
//	go run ./internal/cmd/chaos -seed 7 -ops 200 -kills 10 -duration 3m
//	go run ./internal/cmd/chaos -replicas 3 -journal postgres://postgres@127.0.0.1:5432/test -seed 7
//	go run ./internal/cmd/chaos -replicas 3 -own-postgres -partitions 3 -pg-restarts 2 -seed 7
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
	var c Config
	flag.Int64Var(&c.Seed, "seed", time.Now().UnixNano()%100000, "the schedule's random seed; the same seed makes the same schedule")
	flag.IntVar(&c.Ops, "ops", 120, "send commands to issue")
	flag.IntVar(&c.Kills, "kills", 6, "times to SIGKILL and restart the bot")
	flag.DurationVar(&c.Duration, "duration", 2*time.Minute, "how long the faults last; the wind-down comes after")
	flag.IntVar(&c.Chats, "chats", 24, "target chats to spread the sends over")
	flag.StringVar(&c.Bot, "bot", "", "the bot binary (default: built from ./cmd/bot)")
	flag.StringVar(&c.Policies, "policies", "policies.yaml", "policy file to start from")
	flag.BoolVar(&c.Verbose, "v", false, "print every action")
	flag.Float64Var(&c.ModelShare, "model", 0.3, "share of the sends made as plain text, by a model turn against the scripted model (0: no model)")
	flag.Float64Var(&c.MCPShare, "mcp", 0.2, "share of the sends made by outside agents over MCP, half through `countersign mcp` over stdio beside the bot, half over HTTP to its -mcp-listen (0: none)")
	flag.Float64Var(&c.Actions, "actions", 0.3, "share of the calls that are not text sends: photos, edits, deletes, pins and unpins by command; albums and declared HTTP tools by the MCP callers (0: text sends only, as runs before)")
	flag.BoolVar(&c.FullDisk, "full-disk", true, "put the data folder on a small tmpfs and fill it at times (needs root; not with a PostgreSQL journal)")
	flag.IntVar(&c.Replicas, "replicas", 1, "countersign run processes on one PostgreSQL journal, taking updates by webhook behind a load balancer (above 1 needs -journal)")
	flag.StringVar(&c.Journal, "journal", os.Getenv("COUNTERSIGN_DATABASE_URL"), "a postgres:// URL: the run makes a schema of its own there, and the bot takes updates by webhook (default $COUNTERSIGN_DATABASE_URL; empty: SQLite, long polling)")
	flag.IntVar(&c.Partitions, "partitions", 2, "times to cut one replica off the PostgreSQL journal (a reset or a silent hang) and heal it (PostgreSQL only; 0: none)")
	flag.BoolVar(&c.OwnPostgres, "own-postgres", false, "start a PostgreSQL cluster of the run's own (initdb, pg_ctl) and use it instead of -journal, so that it can be restarted")
	flag.IntVar(&c.PGRestarts, "pg-restarts", 2, "times to restart the run's own PostgreSQL server, cleanly or as a crash (with -own-postgres)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, c, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if !rep.OK() {
		os.Exit(1)
	}
}
