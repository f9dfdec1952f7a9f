package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The people and chats of a run. Operators write from their own private chats;
// the approvers only tap (each card goes to both); strangers write from a pool;
// groups chatter, which the bot stores and does not answer.
const (
	firstOperator = 1000
	operators     = 20
	firstApprover = 101
	approvers     = 2
	firstStranger = 700_000
	strangers     = 500
	firstGroup    = -5000
	groups        = 10
	// Targets: each tapped send writes to a chat of its own, so that the
	// per-chat limit never holds up the send a tap latency is measured on; the
	// auto-approved MCP commits share autoChats chats.
	firstTarget    = 200_000
	firstMCPTarget = 300_000
	firstAutoChat  = 4000
	autoChats      = 20
)

func people(first int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = first + int64(i)
	}
	return out
}

// What the harness offers, by kind.
const (
	kindSend     = "/send (tapped)"
	kindWhoami   = "/whoami from an operator"
	kindHelp     = "/help from an operator"
	kindStranger = "a stranger writes"
	kindGroup    = "group chatter"
	kindTap      = "tap on a card"
)

// plainMix is the share of each kind of plain traffic, in the order drawn.
var plainMix = []struct {
	kind  string
	share float64
}{{kindWhoami, 0.08}, {kindHelp, 0.04}, {kindStranger, 0.38}, {kindGroup, 0.50}}

// sent is a message the run expects the bot to deliver exactly once: an
// approved /send, or an MCP commit.
type sent struct {
	target int64
	text   string
	tapped bool
	tap    int64  // the tap's update id, once tapped
	query  string // the tap's callback query id, which the bot's trace of it names
}

// load is one configuration's mix: what it offered and what it expects.
type load struct {
	cfg   Config
	name  string
	srv   *telegramtest.Server
	rnd   *rand.Rand // the mix's draws
	taps  *rand.Rand // who taps, apart: the tapper's timing must not change the mix
	procs []*proc

	mu      sync.Mutex
	offered map[int64]time.Time // update id → when it was pushed
	kinds   map[string]int      // updates offered, by kind
	sends   map[string]*sent    // by text
	whoami  map[int64]int       // /whoami asked, by operator chat
	cards   map[string]*card    // by callback data, up to the answer
	seen    map[int64]int       // approver chat → its messages read
	n       int                 // texts made
	mcp     mcpFigures
	mcpJobs sync.WaitGroup
}

// mcpFigures count the MCP callers' work.
type mcpFigures struct {
	commits, committed, failed, calls int
	errors                            []string
}

func newLoad(cfg Config, name string, srv *telegramtest.Server, procs []*proc) *load {
	return &load{cfg: cfg, name: name, srv: srv, procs: procs, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x10ad)),
		taps:    rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7a9)),
		offered: map[int64]time.Time{}, kinds: map[string]int{}, sends: map[string]*sent{}, whoami: map[int64]int{},
		cards: map[string]*card{}, seen: map[int64]int{}}
}

func (l *load) offer(kind string, id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offered[id] = time.Now()
	l.kinds[kind]++
}

// text is a new text, unique in the run, with the marker the tapper finds in a
// card, and its number.
func (l *load) text(what string) (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return fmt.Sprintf("load-%s-%s%d the figure of the run", l.name, what, l.n), l.n
}

// marker finds a text's marker in a card.
var marker = regexp.MustCompile(`load-[a-z]+-[sm][0-9]+ the figure of the run`)

// run offers the mix until ctx ends: updates at Rate a second, evenly spaced,
// the kind of each drawn from the seed; MCP commits at MCP a second beside them.
// The taps follow the cards (tapper).
func (l *load) run(ctx context.Context, mcp []*caller) {
	var wg sync.WaitGroup
	wg.Go(func() { l.tapper(ctx) })
	if l.cfg.MCP > 0 {
		wg.Go(func() { l.mcpLoop(ctx, mcp) })
	}
	every := time.Duration(float64(time.Second) / l.cfg.Rate)
	sendShare := l.cfg.Sends / l.cfg.Rate
	tick := time.NewTicker(every)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			l.offerOne(sendShare)
		}
	}
	wg.Wait()
}

// offerOne pushes one update of a kind drawn from the seed.
func (l *load) offerOne(sendShare float64) {
	l.mu.Lock()
	x, op, stranger, group := l.rnd.Float64(), people(firstOperator, operators)[l.rnd.IntN(operators)],
		int64(firstStranger+l.rnd.IntN(strangers)), int64(firstGroup-l.rnd.IntN(groups))
	l.mu.Unlock()
	if x < sendShare {
		text, n := l.text("s")
		target := int64(firstTarget + n)
		l.mu.Lock()
		l.sends[text] = &sent{target: target, text: text, tapped: true}
		l.mu.Unlock()
		l.offer(kindSend, l.srv.PushMessage(op, op, fmt.Sprintf("/send %d %s", target, text)))
		return
	}
	x = (x - sendShare) / (1 - sendShare)
	kind := plainMix[len(plainMix)-1].kind
	for _, m := range plainMix {
		if x < m.share {
			kind = m.kind
			break
		}
		x -= m.share
	}
	switch kind {
	case kindWhoami:
		l.mu.Lock()
		l.whoami[op]++
		l.mu.Unlock()
		l.offer(kind, l.srv.PushMessage(op, op, "/whoami"))
	case kindHelp:
		l.offer(kind, l.srv.PushMessage(op, op, "/help"))
	case kindStranger:
		l.offer(kind, l.srv.PushMessage(stranger, stranger, "hello, is this the shop? I want to order"))
	case kindGroup:
		l.offer(kind, l.srv.PushMessage(stranger, group, "see you all at seven"))
	}
}

// apData is an approval card's callback data, up to the answer.
var apData = regexp.MustCompile(`ap1:[a-z0-9-]+:`)

// tapper taps every approval card once, in one approver's chat (drawn from the
// seed) once its card is shown to every approver: a person taps a card on their
// phone, after it came, and the bot waits for every copy to be out before it acts
// on a tap (so that no copy is left with live buttons), which a harness tapping
// the first copy at once would measure instead of the path. The latency is
// measured from the tap's update leaving the server, so how soon the tapper
// reacts is not part of it.
func (l *load) tapper(ctx context.Context) {
	for ctx.Err() == nil {
		l.srv.WaitTimeout(time.Second, func(s *telegramtest.Server) bool { return l.newCards(s) })
		l.tapCards()
	}
}

// newCards reports whether an approver's chat holds messages the tapper has not read.
func (l *load) newCards(s *telegramtest.Server) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range people(firstApprover, approvers) {
		if len(s.Messages(a)) > l.seen[a] {
			return true
		}
	}
	return false
}

// tapCards reads the approvers' new messages and taps each card shown to all of
// them and not tapped yet.
func (l *load) tapCards() {
	for _, a := range people(firstApprover, approvers) {
		ms := l.srv.Messages(a)
		l.mu.Lock()
		fresh := ms[min(l.seen[a], len(ms)):]
		l.seen[a] = len(ms)
		for _, m := range fresh {
			data, text := apData.FindString(string(m.ReplyMarkup)), marker.FindString(m.Text)
			if _, ok := l.sends[text]; data == "" || !ok {
				continue
			}
			c := l.cards[data]
			if c == nil {
				c = &card{text: text, in: map[int64]int{}}
				l.cards[data] = c
			}
			c.in[a] = m.MessageID
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	var due []string
	for data, c := range l.cards {
		if !c.tapped && len(c.in) == approvers {
			c.tapped = true
			due = append(due, data)
		}
	}
	slices.Sort(due)
	l.mu.Unlock()
	for _, data := range due {
		l.mu.Lock()
		c := l.cards[data]
		by := people(firstApprover, approvers)[l.taps.IntN(approvers)]
		l.mu.Unlock()
		id, query := l.srv.PushCallbackQuery(by, by, c.in[by], data+"y")
		l.mu.Lock()
		l.sends[c.text].tap, l.sends[c.text].query = id, query
		l.mu.Unlock()
		l.offer(kindTap, id)
	}
}

// card is an approval's card as the tapper found it: the text it asks about
// and its message in each approver's chat.
type card struct {
	text   string
	in     map[int64]int
	tapped bool
}

// caller is one outside agent over MCP, on one process's -mcp-listen.
type caller struct {
	endpoint string
	mu       sync.Mutex
	cs       *sdk.ClientSession
}

// bearer adds the MCP bearer token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// session is the caller's MCP session, connected on first use.
func (c *caller) session(ctx context.Context) (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		return c.cs, nil
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "loadbench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.endpoint, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{mcpToken}}}, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP connect to %s: %w", c.endpoint, err)
	}
	c.cs = cs
	return cs, nil
}

func (c *caller) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs != nil {
		c.cs.Close()
		c.cs = nil
	}
}

// call makes one tool call and reads the contract from its result.
func (c *caller) call(ctx context.Context, name string, args map[string]any) (action.Result, error) {
	cs, err := c.session(ctx)
	if err != nil {
		return action.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 70*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return action.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	var r action.Result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil {
		return action.Result{}, fmt.Errorf("%s: the result: %w", name, err)
	}
	if res.IsError {
		return r, fmt.Errorf("%s: a tool error: %s", name, r.Reason)
	}
	return r, nil
}

// mcpLoop has the callers commit at MCP a second until ctx ends, in turn, each
// commit followed to its outcome (await_outcome) in the background: most to
// the auto-approved chats, every 10th to a chat of its own that needs a tap.
func (l *load) mcpLoop(ctx context.Context, callers []*caller) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / l.cfg.MCP))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		text, n := l.text("m")
		s := &sent{target: int64(firstAutoChat + i%autoChats), text: text}
		if i%10 == 9 {
			s.target, s.tapped = int64(firstMCPTarget+n), true
		}
		l.mu.Lock()
		l.sends[text] = s
		l.mcp.commits++
		l.mu.Unlock()
		l.mcpJobs.Go(func() { l.commit(callers[i%len(callers)], s) })
	}
}

// commit makes one MCP commit and follows it until it ends, as an agent that
// reads the contract does. The harness's context does not bound it: a commit
// asked for is followed through the drain.
func (l *load) commit(c *caller, s *sent) {
	ctx := context.Background()
	fail := func(err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.mcp.failed++
		if len(l.mcp.errors) < 5 {
			l.mcp.errors = append(l.mcp.errors, err.Error())
		}
	}
	r, err := c.call(ctx, "commit_send_message", map[string]any{"chat_id": fmt.Sprint(s.target), "text": s.text})
	calls := 1
	defer func() {
		l.mu.Lock()
		l.mcp.calls += calls
		l.mu.Unlock()
	}()
	if err != nil || r.OperationID == "" {
		fail(fmt.Errorf("commit of %q: %v (%s %s)", s.text, err, r.Status, r.Reason))
		return
	}
	deadline := time.Now().Add(3 * time.Minute)
	for r.Status == action.StatusPending && time.Now().Before(deadline) {
		calls++
		if r, err = c.call(ctx, "await_outcome", map[string]any{"operation_id": r.OperationID, "timeout_s": 10}); err != nil {
			fail(err)
			return
		}
	}
	if r.Status != action.StatusSucceeded || r.SideEffect != action.SideEffectCommitted {
		fail(fmt.Errorf("%s ended %s/%s: %s", r.OperationID, r.Status, r.SideEffect, r.Reason))
		return
	}
	l.mu.Lock()
	l.mcp.committed++
	l.mu.Unlock()
}

// policy is the starting policy with an auto_approve rule for the MCP callers'
// chats; everything else as shipped.
func policy(src string) (string, error) {
	var chats []string
	for i := range autoChats {
		chats = append(chats, fmt.Sprintf("%q", fmt.Sprint(firstAutoChat+i)))
	}
	p := strings.Replace(src, "auto_approve: []", "auto_approve:\n  - tool: commit_send_message\n    chats: ["+strings.Join(chats, ", ")+"]", 1)
	if p == src {
		return "", fmt.Errorf("the policy's auto_approve is not in the expected form")
	}
	return p, nil
}
