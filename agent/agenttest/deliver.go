package agenttest

import (
	"net/http"
	"time"
)

// write sends res, with the troubles of rep: stall, cut, drop or fail at their
// points, and the pace between events. Points are counted in events for a stream;
// a plain body has two halves, so any point after the start is its middle.
func (s *Server) write(w http.ResponseWriter, r *http.Request, res response, rep Reply) {
	t := rep.trouble
	at := func(p point, i int) bool {
		if !p.on {
			return false
		}
		if !res.stream {
			return min(p.after, 1) == i
		}
		return p.after == i
	}
	h := w.Header()
	for k, vs := range res.header {
		h[k] = append([]string(nil), vs...)
	}
	for k, vs := range rep.Header {
		h[k] = append(h[k], vs...)
	}
	w.WriteHeader(res.status)
	flush(w)
	for i := 0; i <= len(res.parts); i++ {
		switch {
		case at(t.stall, i) && !s.stall(w, r, res, t.stallFor, t.pings):
			return
		case at(t.cut, i):
			return
		case at(t.drop, i):
			dropConnection(w)
			return
		case res.stream && at(t.fail, i):
			w.Write(failEvent(res.format, failure(res.format, t.failWith, 0, false)))
			return
		case i == len(res.parts):
			return
		}
		if _, err := w.Write(res.parts[i]); err != nil {
			return
		}
		flush(w)
		if res.stream && t.pace > 0 && i < len(res.parts)-1 && !s.pause(r.Context(), t.pace) {
			return
		}
	}
}

// stall sends nothing for d (0: until the client goes away) but, in a stream,
// a ping every pings; it reports whether the stall ran to its end.
func (s *Server) stall(w http.ResponseWriter, r *http.Request, res response, d, pings time.Duration) bool {
	if !res.stream || pings <= 0 {
		return s.pause(r.Context(), d)
	}
	var end <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(pings)
	defer tick.Stop()
	for {
		select {
		case <-end:
			return true
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		case <-tick.C:
			if _, err := w.Write(ping(res.format)); err != nil {
				return false
			}
			flush(w)
		}
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// dropConnection closes the client's connection in the middle of the response:
// what was written so far arrives, then the body breaks off.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}
