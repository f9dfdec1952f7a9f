package review_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

const (
	alice   = 100 // operator and approver
	bob     = 200 // approver
	carol   = 300 // escalation approver, when a test names her so
	mallory = 999 // nobody
	target  = 222 // where messages go
	token   = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
)

// telegramScript is the Telegram WebApp object the test provides, as
// Telegram's script makes it: its init data (%q), and a record of the calls
// the page makes on it.
const telegramScript = `window.Telegram = { WebApp: {
  initData: %q,
  calls: [],
  ready() { this.calls.push("ready"); },
  expand() { this.calls.push("expand"); },
} };`

// ticketsToken is the secret the declared HTTP tool's header carries.
const ticketsToken = "tk-secret-value-never-shown"

// rig is a Telegram bot over the stand-in Bot API, wired as countersign run
// wires it, with its review page served over real HTTP (as -review-listen
// and -review-url do).
type rig struct {
	t      *testing.T
	srv    *telegramtest.Server
	page   *httptest.Server // the review page's server
	logs   *syncbuf.Buffer
	j      *journal.Journal
	op     *operator.Operator
	h      *command.Handler
	bot    *telegram.Bot
	review *review.Server
	now    func() time.Time
	lastOp string // the operation a kind's test asked for
	// webApp is the init data the Telegram WebApp object the page loads
	// holds (telegram-web-app.js, served beside the page, as the test's own
	// Telegram): set it before a page opens.
	webApp atomic.Value
}

// rigOption changes the rig's policy before it starts.
type rigOption func(*policy.Policy)

// withTools offers the named tools, approval required, fetching files from
// loopback (the tests' servers).
func withTools(names ...string) rigOption {
	return func(p *policy.Policy) {
		for _, n := range names {
			p.Tools[n] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		}
		p.Files.FetchPrivate = true
	}
}

func newRig(t *testing.T, opts ...rigOption) *rig {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{alice}, Approvers: []policy.UserID{alice, bob}}
	for _, o := range opts {
		o(p)
	}
	r := &rig{t: t, srv: telegramtest.NewServer(t, telegramtest.Options{Token: token}), logs: &syncbuf.Buffer{}, now: time.Now}
	r.webApp.Store("")
	r.page = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/telegram-web-app.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, telegramScript, r.webApp.Load().(string))
			return
		}
		r.review.ServeHTTP(w, req)
	}))
	t.Cleanup(r.page.Close)
	dir := t.TempDir()
	files, err := filestore.Open(filepath.Join(dir, "files"))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	ctx, stop := context.WithCancel(context.Background())
	rg := rigtest.New(t, rigtest.Dir(dir), rigtest.Policy(p), rigtest.Owning(),
		rigtest.SenderOf(func(j *journal.Journal) tools.Sender {
			o := telegram.Options{Token: token, APIURL: r.srv.URL(), PollTimeout: time.Second, SendTimeout: 2 * time.Second,
				Limits: &telegram.Limits{Overall: 10000, PerChat: 10000, PerGroup: 10000, ChatBurst: 1000}, Logger: logger,
				Files: files, ReviewURL: r.page.URL}
			if r.bot, err = telegram.New(ctx, j, o); err != nil {
				t.Fatal(err)
			}
			return r.bot.Sender()
		}),
		rigtest.Parts(func(w *wiring.Parts) {
			w.Logger, w.SweepEvery, w.WatchEvery = logger, 50*time.Millisecond, 50*time.Millisecond
			w.Getenv = func(k string) string { return map[string]string{"TICKETS_TOKEN": ticketsToken}[k] }
		}))
	r.j, r.op, r.h = rg.Journal, rg.Operator, rg.Handler
	r.h.Reviewer = review.Linker{Keys: review.NewKeys(token), Base: r.page.URL}
	r.review = review.New(review.Options{Handler: r.h, Token: token, Files: files, Audience: r.bot.Audience, Logger: logger,
		TelegramScript: r.page.URL + "/telegram-web-app.js",
		Now:            func() time.Time { return r.now() }})
	done := make(chan error, 1)
	go func() { done <- r.bot.Serve(ctx, telegram.Deps{Handler: r.h, Policy: p}) }()
	t.Cleanup(func() { // before the rig closes the journal: cleanups run last first
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
		r.checkNoSecretLogged()
	})
	return r
}

// call asks for tool with args in a task of an outside agent, and returns the
// operation, pending approval.
func (r *rig) call(tool string, args any) string {
	r.t.Helper()
	task, err := r.op.StartTask(r.t.Context(), journal.Task{Surface: "mcp", Summary: "review test"})
	if err != nil {
		r.t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	res, err := r.op.Call(r.t.Context(), task.ID, operator.Call{Tool: tool, Args: raw})
	if err != nil || res.Status != action.StatusPending {
		r.t.Fatalf("%s = %+v, %v; want pending", tool, res, err)
	}
	return res.OperationID
}

// approval is what opID waits on, as the cards show it.
func (r *rig) approval(opID string) command.Approval {
	r.t.Helper()
	a, err := r.h.Approval(r.t.Context(), opID)
	if err != nil {
		r.t.Fatalf("approval of %s: %v", opID, err)
	}
	return a
}

// initData is init data for user as Telegram signs it, now.
func (r *rig) initData(user int64) string {
	return review.SignInitData(token, review.InitUser{ID: user, FirstName: fmt.Sprint("user", user)}, r.now(), map[string]string{"chat_type": "private"})
}

// answer is what the page's server answers.
type answer struct {
	Status   int    `json:"-"`
	HTML     string `json:"html"`
	SHA256   string `json:"sha256"`
	Text     string `json:"text"`
	Editable bool   `json:"editable"`
	Code     bool   `json:"code"`
	Said     string `json:"said"`
	Done     bool   `json:"done"`
	Error    string `json:"error"`
	StepUp   string `json:"step_up"`
}

// post posts body to the page's API (show, decide).
func (r *rig) post(api string, body map[string]any) answer {
	r.t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(r.page.URL+review.Path+"/api/"+api, "application/json", bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	var a answer
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		r.t.Fatalf("%s: %v", api, err)
	}
	a.Status = res.StatusCode
	return a
}

// show is the page's payload for apID, as user opens it from Telegram.
func (r *rig) show(apID string, user int64) answer {
	r.t.Helper()
	return r.post("show", map[string]any{"approval": apID, "init_data": r.initData(user)})
}

// waitFor waits for cond on the stand-in, failing after a deadline.
func (r *rig) waitFor(what string, cond func(*telegramtest.Server) bool) {
	r.t.Helper()
	if err := r.srv.WaitTimeout(10*time.Second, cond); err != nil {
		r.t.Fatalf("waiting for %s: %v\nlogs:\n%s", what, err, r.logs.String())
	}
}

// card waits for the open card of opID in chat.
func (r *rig) card(chat int64, opID string) telegramtest.Message {
	r.t.Helper()
	var card telegramtest.Message
	r.waitFor("card "+opID, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.Contains(m.Text, "Operation: "+opID) && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				card = m
			}
		}
		return card.MessageID != 0
	})
	return card
}

// state is opID's state in the journal.
func (r *rig) state(opID string) journal.State {
	r.t.Helper()
	op, err := r.j.Operation(r.t.Context(), opID)
	if err != nil {
		r.t.Fatal(err)
	}
	return op.State
}

// waitState waits for opID to reach s.
func (r *rig) waitState(opID string, s journal.State) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%s %s", opID, s), func(*telegramtest.Server) bool { return r.state(opID) == s })
}

// checkNoSecretLogged fails the test when the log holds the bot token, its
// secret half, or a credential of the page (an init data hash, a link's MAC).
func (r *rig) checkNoSecretLogged() {
	logs := r.logs.String()
	_, half, _ := strings.Cut(token, ":")
	for _, secret := range []string{token, half, "hash=", "#link=", "init_data"} {
		if strings.Contains(logs, secret) {
			r.t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
}
