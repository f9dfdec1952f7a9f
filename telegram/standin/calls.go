package standin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// serveHTTP answers one Bot API call: route, record, apply any fault,
// run the method, write the reply.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	method, client, rep := s.route(r.URL.Path)
	params, files, err := readParams(r)
	switch {
	case rep != nil:
	case errors.Is(err, errBodyTooLarge):
		rep = new(errEntityTooLarge.reply())
	case err != nil:
		e := badRequest("can't parse request body")
		rep = new(e.reply())
	}
	req := s.beginCall(method, client, params, files)
	if rep != nil {
		writeReply(w, *rep)
		s.finishCall(req, rep.status, rep.description)
		return
	}
	f := s.pickFault(req)
	if f.Delay > 0 && !s.pause(r.Context(), f.Delay) {
		s.finishCall(req, 0, "")
		dropConnection(w)
		return
	}
	s.answer(w, r, req, f)
}

// answer runs the method unless the fault replaces it, then writes the
// reply or drops the connection as the fault says.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *request, f Fault) {
	switch f.Action {
	case ActionReply:
		rep := f.reply()
		writeReply(w, rep)
		s.finishCall(req, rep.status, rep.description)
		return
	case ActionDropBeforeAccept:
		s.finishCall(req, 0, "")
		dropConnection(w)
		return
	}
	rep := s.dispatch(r.Context(), req)
	switch f.Action {
	case ActionAcceptThenReply:
		s.replyLost(rep.committed)
		rep := f.reply()
		writeReply(w, rep)
		s.finishCall(req, rep.status, rep.description)
	case ActionAcceptThenDrop:
		s.replyLost(rep.committed)
		s.finishCall(req, 0, "")
		dropConnection(w)
	case ActionAcceptThenHang:
		s.replyLost(rep.committed)
		s.pause(r.Context(), 0)
		s.finishCall(req, 0, "")
		dropConnection(w)
	default:
		writeReply(w, rep)
		s.finishCall(req, rep.status, rep.description)
	}
}

// dispatch runs the named method.
func (s *Server) dispatch(ctx context.Context, req *request) reply {
	m, ok := methods[strings.ToLower(req.method)]
	if !ok {
		return errNotFound.reply()
	}
	return m(s, ctx, req)
}

// pause waits d (forever when d is 0) and reports whether it ran to the
// end; it returns false early when the client goes away or the server
// closes.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	var expired <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-expired:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// dropConnection closes the client connection without writing a response.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// beginCall records the call and returns its request.
func (s *Server) beginCall(method, client string, params map[string]string, files map[string]upload) *request {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := &request{method: method, params: params, files: files, seq: len(s.calls) + 1}
	if method != "" {
		req.chatID = s.chats.idOf(params["chat_id"])
	}
	var uploads map[string]Upload
	for field, f := range files {
		if uploads == nil {
			uploads = map[string]Upload{}
		}
		uploads[field] = f.record()
	}
	s.calls = append(s.calls, Call{
		Seq:     req.seq,
		Method:  method,
		Client:  client,
		Params:  params,
		Uploads: uploads,
		ChatID:  req.chatID,
		Time:    s.now(),
	})
	s.notifyLocked()
	return req
}

func (s *Server) finishCall(req *request, status int, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.calls[req.seq-1]
	c.Done, c.Status, c.Description = true, status, description
	if status == http.StatusTooManyRequests {
		s.tooMany++
	}
	s.notifyLocked()
	s.log("%s chat=%d -> %d %s", c.Method, c.ChatID, status, description)
}

// Calls returns every call received so far, in arrival order, including
// calls with a wrong token (Method empty, Status 401).
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.clone()
	}
	return out
}

// CallsTo returns the calls to method (compared case-insensitively, as
// the Bot API does).
func (s *Server) CallsTo(method string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if strings.EqualFold(c.Method, method) {
			out = append(out, c)
		}
	}
	return out
}

// TooManyRequests counts the 429 replies sent, by faults or by the flood
// limiter.
func (s *Server) TooManyRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tooMany
}
