package main

import (
	"fmt"
	"net"
	"slices"

	"github.com/countersign/countersign/action"
)

// Behind replicas, each replica serves MCP on a -mcp-listen of its own, and each
// HTTP caller follows one replica: its sessions are that replica's, and when the
// replica dies under it (the call is cut, or the connection refused), it moves
// on to the next one in the ring and asks there again, by operation id, for the
// operations it follows. A commit whose call was cut is looked for in
// list_pending, or called again in a new session, as with one bot. The stdio
// callers run `countersign mcp` on the database, beside every replica.

// mcpAddrs gives each replica a free loopback address for its -mcp-listen.
func (a *agents) mcpAddrs(reps []*replica) error {
	a.addrs = map[string]string{}
	for _, r := range reps {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		a.addrs[r.name] = ln.Addr().String()
		ln.Close()
	}
	for i, c := range a.callers {
		if c.http {
			c.at = reps[i%len(reps)].name // the callers spread over the replicas
		}
	}
	return nil
}

// listenOf is replica r's -mcp-listen address.
func (a *agents) listenOf(r *replica) string {
	if addr, ok := a.addrs[r.name]; ok {
		return addr
	}
	return a.addr
}

// endpoint is the MCP URL an HTTP caller connects to: the replica it follows,
// or the one bot.
func (c *caller) endpoint() string {
	if c.at != "" {
		return "http://" + c.a.addrs[c.at] + "/mcp"
	}
	return "http://" + c.a.addr + "/mcp"
}

// moveOn makes an HTTP caller that follows a replica follow the next one in the
// ring: the one it followed died under it (its session was lost, or it refused
// the connection). Called with c.mu held.
func (c *caller) moveOn() {
	if c.at == "" {
		return
	}
	names := make([]string, 0, len(c.a.addrs))
	for n := range c.a.addrs {
		names = append(names, n)
	}
	slices.Sort(names)
	from := c.at
	c.at = names[(slices.Index(names, from)+1)%len(names)]
	c.a.note("caller moved on to another replica")
	if c.a.w.cfg.Verbose {
		fmt.Fprintf(c.a.w.out, "  mcp: %s moved on from %s to %s\n", c.name, from, c.at)
	}
}

// outcomesLearned: every operation an MCP caller was given, the caller learned
// the outcome of, after the wind-down: its last look (whichever replica it
// followed then) is an outcome (committed, or stopped with nothing sent) or an
// unknown outcome it was told about, never still pending.
func (a *agents) outcomesLearned() Invariant {
	in := Invariant{Name: "every MCP caller learned each of its operations' outcome, or that it is unknown"}
	for _, id := range sortedKeys(a.texts) {
		v, seen := a.views[id]
		_, final := states(v)
		switch {
		case !seen || !a.looked[id]:
			in.Broken = append(in.Broken, fmt.Sprintf("%s: its caller never read it after the wind-down", id))
		case !final && v.SideEffect != action.SideEffectUnknown:
			in.Broken = append(in.Broken, fmt.Sprintf("%s: its caller last saw %s/%s/%s, no outcome", id, v.Status, v.SideEffect, v.NextAction))
		}
	}
	return in
}
