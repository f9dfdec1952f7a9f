package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
)

// modelKey is the API key the bot is given for the scripted model: a secret the
// run looks for in every file and log line, as it does the bot token.
const modelKey = "sk-ant-test-chaos0000000000000000000000"

// askPattern is how the run words a model turn, and how the scripted model reads
// it back: which chat, and the text to send there.
var askPattern = regexp.MustCompile(`please tell chat (\d+) exactly: (chaos \d+ model \d+)`)

// ask is the operator's plain text for a model turn that sends text to target.
func ask(target int64, text string) string {
	return fmt.Sprintf("please tell chat %d exactly: %s", target, text)
}

// draftOf is the text of the draft the model prepares before it commits text.
func draftOf(text string) string { return "draft of " + text }

// model is the scripted model behind the bot: every turn drafts with prepare_reply,
// then sends with commit_send_message, then ends; its delivery goes wrong at
// random, as a real service's does, from its own seeded source (the requests come
// on the server's goroutines, at times the schedule does not control).
type model struct {
	srv *agenttest.Server

	mu     sync.Mutex
	rnd    *rand.Rand
	faults map[string]int
	calm   bool                  // the wind-down: no more faults
	turns  map[string]*turnState // by the text the turn sends
	since  time.Time             // the bot's last start: turns before it were cut short
}

// turnState is what the scripted model last did for one turn.
type turnState struct {
	last time.Time // the last request
	done bool      // the last reply ended the turn, and was not made to fail
}

func newModel(seed int64) *model {
	m := &model{rnd: rand.New(rand.NewPCG(uint64(seed), 0x70de1)), faults: map[string]int{}, turns: map[string]*turnState{}}
	m.srv = agenttest.Start(m.answer)
	return m
}

func (m *model) close() { m.srv.Close() }

// turn reads a request body (Anthropic's Messages API): the last operator line
// that asks for a send, and the names of the tools whose results came back since.
func turn(body []byte) (chat, text string, ran []string) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "", "", nil
	}
	type block struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		ToolUseID string `json:"tool_use_id"`
	}
	names := map[string]string{} // tool_use id → tool, within the turn
	for _, msg := range req.Messages {
		var blocks []block
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			blocks = []block{{Type: "text", Text: s}}
		} else if json.Unmarshal(msg.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch {
			case msg.Role == "user" && b.Type == "text":
				if g := askPattern.FindStringSubmatch(b.Text); g != nil {
					chat, text, ran, names = g[1], g[2], nil, map[string]string{}
				}
			case b.Type == "tool_use":
				names[b.ID] = b.Name
			case b.Type == "tool_result":
				ran = append(ran, names[b.ToolUseID])
			}
		}
	}
	return chat, text, ran
}

// answer is the script: draft, send, done, each reply perhaps delivered badly.
func (m *model) answer(req agenttest.Request) agenttest.Reply {
	chat, text, ran := turn(req.Body)
	var r agenttest.Reply
	ends := true
	switch {
	case text == "":
		r = agenttest.Message("end_turn", "I only send what I am asked to.")
	case len(ran) == 0:
		r, ends = agenttest.Message("tool_use", "Drafting it first.", agenttest.Call("prepare_reply", mustJSON(map[string]string{"text": draftOf(text)}))), false
	case !contains(ran, "commit_send_message"):
		// A commit that waits for a tap ends the turn; an auto-approved one comes
		// back with its result.
		r, ends = agenttest.Message("tool_use", "Sending it.", agenttest.Send(chat, text)), !isAuto(chat)
	default:
		r = agenttest.Message("end_turn", "Sent.")
	}
	r, failed := m.disturb(r, req.Streamed)
	m.mu.Lock()
	defer m.mu.Unlock()
	if text != "" {
		m.turns[text] = &turnState{last: time.Now(), done: ends && !failed}
	}
	return r
}

// restarted marks the bot's start: a turn still open before it was cut short by
// the kill, and no process will ask for it again.
func (m *model) restarted() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.since = time.Now()
}

// quiet stops the faults, for the wind-down.
func (m *model) quiet() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calm = true
}

// busy names the turns of the running bot that may still ask for more: the last
// reply neither ended the turn nor came before the kill that cut it short, nor
// longer ago than the longest wait between two requests (the backoff's cap, 30 s),
// after which the bot gave the turn up (a full disk stopped it, or its budget).
func (m *model) busy() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var open []string
	for text, t := range m.turns {
		if !t.done && t.last.After(m.since) && time.Since(t.last) < 35*time.Second {
			open = append(open, text)
		}
	}
	return open
}

// disturb makes about a third of the replies go wrong in one of the ways a model
// service fails: overloaded, rate limited with retry-after, a server error, a
// stall past the policy's stall_abort, an error event inside the stream, a
// connection dropped in the middle of the reply (after the tool call began).
func (m *model) disturb(r agenttest.Reply, streamed bool) (agenttest.Reply, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calm {
		return r, false
	}
	r, failed := m.fault(r, streamed)
	return r, failed
}

func (m *model) fault(r agenttest.Reply, streamed bool) (agenttest.Reply, bool) {
	x := m.rnd.Float64()
	note := func(name string) { m.faults["model: "+name]++ }
	switch {
	case x < 0.06:
		note("529 overloaded")
		return agenttest.Fail(agenttest.Overload), true
	case x < 0.12:
		note("429 with retry-after")
		return agenttest.RateLimited(time.Second), true
	case x < 0.16:
		note("500")
		return agenttest.Fail(agenttest.ServerError), true
	case x < 0.20 && streamed:
		note("stall past stall_abort")
		return r.StallAfter(2, 0), true
	case x < 0.26 && streamed:
		note("overloaded_error inside the stream")
		return r.FailAfter(3, agenttest.Overload), true
	case x < 0.34:
		note("connection dropped mid-reply")
		return r.DropAfter(4), true
	}
	return r, false
}

// counts returns the faults the model made, by name.
func (m *model) counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for k, v := range m.faults {
		out[k] = v
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
