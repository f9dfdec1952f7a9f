// Command sendbench measures delivery and approval latency through the fake Bot
// API server, with Telegram's flood limits enforced, each beside a baseline from
// the same run.
//
//	go run ./internal/cmd/sendbench
//
// Delivery: for each -runs N/M, N auto-approved messages across M chats, once
// through Countersign and once with go-telegram/bot alone (and the retry a careful
// user writes), against Telegram's theoretical minimum: the longer of N at 30/s and
// the busiest chat at 1/s. -drop K makes every K-th sendMessage be accepted by
// Telegram and then lose its response, as a timeout after acceptance does.
//
// Approval latency: -approvals of them, one at a time, from the tap's update
// leaving the fake server (a getUpdates response carrying it) to the approved
// sendMessage reaching it, journal included; beside the same span for a bare
// go-telegram/bot that sends as soon as it sees the tap, and the durable inserts
// the path must make.
//
// Each goal is printed as a PASS or FAIL line; the exit status is 1 when one is
// missed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
)

const token = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// goalRatio is the slowest delivery allowed, against the theoretical minimum.
const goalRatio = 1.10

type config struct {
	runs      []shape
	drop      int
	photos    int
	approvals int
	policies  string
	verbose   bool
	replicas  int    // replicas that send the delivery runs (1: one process on SQLite)
	journal   string // their PostgreSQL journal, with replicas above 1
}

// shape is one delivery run: n messages across chats.
type shape struct{ n, chats int }

func (s shape) String() string { return fmt.Sprintf("%d/%d", s.n, s.chats) }

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "sendbench:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	failed := false
	for _, s := range c.runs {
		ok, err := deliveryRun(ctx, c, s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sendbench: %s: %v\n", s, err)
			os.Exit(1)
		}
		failed = failed || !ok
	}
	if c.approvals > 0 {
		if err := approvalRun(ctx, c); err != nil {
			fmt.Fprintf(os.Stderr, "sendbench: approval latency: %v\n", err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var c config
	var runs string
	fs := flag.NewFlagSet("sendbench", flag.ContinueOnError)
	fs.StringVar(&runs, "runs", "600/60,100/20", "delivery runs, each messages/chats; empty for none")
	fs.IntVar(&c.drop, "drop", 25, "every K-th send is accepted, then its response lost (0: never)")
	fs.IntVar(&c.photos, "photos", 4, "every K-th message is a photo with a caption, uploaded (0: texts only)")
	fs.IntVar(&c.approvals, "approvals", 200, "approvals to time, one at a time (0: none)")
	fs.StringVar(&c.policies, "policies", "policies.yaml", "policy file to start from")
	fs.BoolVar(&c.verbose, "v", false, "print where each delivery run's time goes")
	fs.IntVar(&c.replicas, "replicas", 1, "replicas on one PostgreSQL journal that send the delivery runs together, each chat's messages in turn (1: one process on SQLite)")
	fs.StringVar(&c.journal, "journal", os.Getenv("COUNTERSIGN_DATABASE_URL"), "with -replicas above 1: a postgres:// URL; the run makes a schema of its own there (default $COUNTERSIGN_DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, r := range strings.Split(runs, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		n, chats, ok := strings.Cut(r, "/")
		s := shape{}
		var err1, err2 error
		s.n, err1 = strconv.Atoi(n)
		s.chats, err2 = strconv.Atoi(chats)
		if !ok || err1 != nil || err2 != nil || s.n < 1 || s.chats < 1 {
			return c, fmt.Errorf("-runs: %q is not messages/chats, both positive", r)
		}
		c.runs = append(c.runs, s)
	}
	if c.drop < 0 || c.approvals < 0 || c.photos < 0 {
		return c, fmt.Errorf("-drop, -photos and -approvals must not be negative")
	}
	if c.replicas < 1 {
		return c, fmt.Errorf("-replicas must be at least 1")
	}
	if (c.replicas > 1 || c.journal != "") && !journal.IsPostgres(c.journal) {
		return c, fmt.Errorf("-replicas above 1 needs -journal with a postgres:// URL (or COUNTERSIGN_DATABASE_URL)")
	}
	return c, nil
}

// verdict prints one goal's PASS or FAIL line and says whether it passed.
func verdict(ok bool, format string, args ...any) bool {
	word := "PASS"
	if !ok {
		word = "FAIL"
	}
	fmt.Printf("%s  %s\n", word, fmt.Sprintf(format, args...))
	return ok
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
