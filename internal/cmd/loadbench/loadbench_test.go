package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/skips"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A short run of both configurations, as CI makes it: the real binary, three
// replicas on a fresh PostgreSQL schema, then one process on SQLite, each under
// the mix for a few seconds; nothing delivered twice, nothing lost, and every
// figure the README quotes measured and within reason.
func TestLoadShortRun(t *testing.T) {
	skips.Long(t, "builds the bot and runs four processes under load, about a minute")
	cfg := Config{Duration: 8 * time.Second, Rate: 30, Sends: 1, MCP: 2, Replicas: 3, Seed: 5,
		Journal: pgtest.Server(t), Policies: "../../../policies.yaml"}
	var out bytes.Buffer
	rep, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a duplicate or a lost update:\n%s", out.String())
	}
	for _, f := range []*Figures{rep.Cluster, rep.Single} {
		if f.Taken == 0 || f.Handled == 0 || f.Offered == 0 || f.TakenAll != f.Offered {
			t.Errorf("%s: offered %d, taken %d (%d in all), handled %d; want all taken and some handled during the load", f.Name, f.Offered, f.Taken, f.TakenAll, f.Handled)
		}
		if f.Taps == 0 || f.TapP50 <= 0 || f.TapP50 > f.TapP99 || f.TapP99 > f.TapMax || f.TapMax > 30*time.Second {
			t.Errorf("%s: %d taps, p50 %v, p99 %v, max %v; want some, ordered, under 30 s", f.Name, f.Taps, f.TapP50, f.TapP99, f.TapMax)
		}
		// Every tap is cut into its stages by the bot's trace, and the steps each
		// one passes took time.
		b := f.Breakdown
		if b.Traced != f.Taps || len(b.Spans) != len(tapStages) {
			t.Errorf("%s: %d of %d taps traced, %d spans; want every tap, and %d spans", f.Name, b.Traced, f.Taps, len(b.Spans), len(tapStages))
		}
		for i, s := range tapStages {
			switch s.name {
			case "inbox (stored durably)", "decision recorded", "checks (binding, holds, audience)", "write-ahead (committing)", "Bot API call reaching the server":
				if i < len(b.Spans) && b.Spans[i][2] <= 0 {
					t.Errorf("%s: stage %q measured at most %v; every tap passes it, and it takes a write or a round trip", f.Name, s.name, b.Spans[i][2])
				}
			}
		}
		if b.Unpaced[2] > f.TapMax || b.Unpaced[2] < 0 || b.Pacing[2] < 0 {
			t.Errorf("%s: less its pacing, the slowest tap took %v of %v (pacing up to %v)", f.Name, b.Unpaced[2], f.TapMax, b.Pacing[2])
		}
		if f.MCP.commits == 0 || f.MCP.committed != f.MCP.commits {
			t.Errorf("%s: MCP commits %d, committed %d: %v", f.Name, f.MCP.commits, f.MCP.committed, f.MCP.errors)
		}
		if f.TooMany != 0 {
			t.Errorf("%s: %d answers 429 from the fake Telegram; the limiter keeps under its limits", f.Name, f.TooMany)
		}
		if len(f.Mem) != f.Procs {
			t.Fatalf("%s: memory of %d processes, want %d", f.Name, len(f.Mem), f.Procs)
		}
		for _, m := range f.Mem {
			if m.PeakRSS < 1<<20 || m.PeakRSS > 1<<30 || m.EndRSS <= 0 || m.EndRSS > m.PeakRSS || m.WarmRSS <= 0 ||
				m.PeakAnon <= 0 || m.PeakFile <= 0 || m.PeakAnon+m.PeakFile < m.PeakRSS/2 ||
				m.PeakHeap <= 0 || m.EndHeap <= 0 || m.EndGoroutines <= 0 || m.CPU <= 0 {
				t.Errorf("%s %s: memory and CPU not all measured, or out of reason: %+v", f.Name, m.Name, m)
			}
		}
		offered := 0
		for _, w := range f.Windows {
			offered += w.Offered
		}
		if len(f.Windows) == 0 || offered != f.Offered {
			t.Errorf("%s: %d windows counting %d offered, want %d", f.Name, len(f.Windows), offered, f.Offered)
		}
	}
	if !strings.Contains(out.String(), "tap to send by stage") {
		t.Errorf("no breakdown of the taps by stage:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "PASS  duplicates 0 and 0, lost updates 0 and 0") {
		t.Errorf("no PASS line:\n%s", out.String())
	}
	t.Log(out.String())
}

// The checks catch what they name: an update the bot took and never handled,
// one never taken, a text delivered twice, a card shown twice in one chat, and
// an approved text that never arrived. A check that cannot fail proves nothing.
func TestChecksCatchDuplicatesAndLosses(t *testing.T) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: token})
	api := func(method string, v url.Values) {
		t.Helper()
		resp, err := http.PostForm(srv.URL()+"/bot"+token+"/"+method, v)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", method, resp.Status)
		}
	}
	api("setWebhook", url.Values{"url": {hookURL}})
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer hook.Close()
	l := newLoad(Config{Seed: 1}, "x", srv, nil)
	start := time.Now()
	handled := l.srv.PushMessage(firstOperator, firstOperator, "/help")
	unhandledID := l.srv.PushMessage(firstOperator, firstOperator, "/help")
	l.offer(kindHelp, handled)
	l.offer(kindHelp, unhandledID)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.DeliverWebhook(ctx, telegramtest.PostWebhook(hook.Client(), func() (string, error) { return hook.URL, nil }))
	if err := srv.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool { return len(s.PendingUpdates()) == 0 }); err != nil {
		t.Fatal(err)
	}
	cancel()
	l.offer(kindHelp, 999_999) // offered, never delivered
	twice, never := "load-x-s1 the figure of the run", "load-x-s2 the figure of the run"
	l.sends[twice] = &sent{target: firstTarget + 1, text: twice}
	l.sends[never] = &sent{target: firstTarget + 2, text: never}
	for range 2 {
		api("sendMessage", url.Values{"chat_id": {"200001"}, "text": {twice}})
		api("sendMessage", url.Values{"chat_id": {"101"}, "text": {"card"}, "reply_markup": {`{"inline_keyboard":[[{"text":"Approve","callback_data":"ap1:a-1:y"}]]}`}})
	}
	rows := []inboxRow{{updateID: handled, received: start, handled: time.Now()}, {updateID: unhandledID, received: start}}
	f := l.figures(start, time.Now(), time.Now(), rows, nil)
	lost, dups := strings.Join(f.Lost, "\n"), strings.Join(f.Duplicates, "\n")
	for _, want := range []string{"never handled", "update 999999: offered, never taken", never} {
		if !strings.Contains(lost, want) {
			t.Errorf("lost does not name %q:\n%s", want, lost)
		}
	}
	if len(f.Lost) != 3 {
		t.Errorf("lost: %d, want 3:\n%s", len(f.Lost), lost)
	}
	if len(f.Duplicates) != 2 || !strings.Contains(dups, twice) || !strings.Contains(dups, "card ap1:a-1:") {
		t.Errorf("duplicates:\n%s", dups)
	}
}
