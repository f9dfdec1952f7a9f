package standin

import (
	"net/http"
	"strings"
	"time"
)

// Action is what an injected fault does to a matching call.
type Action int

const (
	// ActionNone answers normally; with Fault.Delay it only delays.
	ActionNone Action = iota
	// ActionReply answers with the fault's error instead of running the
	// method: Code, Description, RetryAfter, MigrateToChatID, or a raw Body.
	ActionReply
	// ActionAcceptThenDrop runs the method (a message is committed), then
	// closes the connection without a response.
	ActionAcceptThenDrop
	// ActionDropBeforeAccept closes the connection without running the
	// method or writing a response.
	ActionDropBeforeAccept
	// ActionAcceptThenHang runs the method, then holds the connection
	// without a response until the client gives up or the server closes.
	ActionAcceptThenHang
	// ActionAcceptThenReply runs the method (a message is committed), then
	// answers with the fault's error, as a proxy's 502 after Telegram took it.
	ActionAcceptThenReply
)

var actionNames = [...]string{"none", "reply", "accept-then-drop", "drop-before-accept", "accept-then-hang", "accept-then-reply"}

func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return "unknown"
	}
	return actionNames[a]
}

// Fault describes a misbehaviour to apply to matching calls. Build one
// with a constructor (TooManyRequests, AcceptThenDrop, ...) and narrow it
// with For, InChat, OnCall, Times and Always.
type Fault struct {
	// Method restricts the fault to one method (case-insensitive); empty
	// matches every method.
	Method string
	// ChatID restricts the fault to calls addressed to one chat; 0 matches
	// any chat.
	ChatID int64
	// Nth is the matching call, counted from Inject, at which the fault
	// first fires; 0 and 1 both mean the next matching call.
	Nth int
	// Count is how many times the fault fires; 0 means once.
	Count int
	// Forever makes the fault fire on every matching call from the Nth on.
	Forever bool

	// Action is what happens to the call.
	Action Action
	// Delay holds the call this long before the action (honouring the
	// client's context and Close).
	Delay time.Duration

	// Code is the error_code and HTTP status of an ActionReply.
	Code int
	// Description is the error description of an ActionReply.
	Description string
	// RetryAfter sets parameters.retry_after.
	RetryAfter int
	// MigrateToChatID sets parameters.migrate_to_chat_id.
	MigrateToChatID int64
	// Body, when set, is written verbatim instead of a JSON error, with
	// ContentType (text/html when empty) and status Code.
	Body        string
	ContentType string
}

// ErrorReply is a fault answering with error_code code. An empty
// description takes the one Telegram sends for that code.
func ErrorReply(code int, description string) Fault {
	if description == "" {
		description = defaultDescription(code)
	}
	return Fault{Action: ActionReply, Code: code, Description: description}
}

func defaultDescription(code int) string {
	for _, e := range []apiError{errUnauthorized, errBotBlocked, errConflict, errBadGateway, errNotFound} {
		if e.Code == code {
			return e.Description
		}
	}
	if code == http.StatusTooManyRequests {
		return tooManyRequests(1).Description
	}
	return http.StatusText(code)
}

// TooManyRequests is a 429 fault with parameters.retry_after.
func TooManyRequests(retryAfter int) Fault {
	e := tooManyRequests(retryAfter)
	return Fault{Action: ActionReply, Code: e.Code, Description: e.Description, RetryAfter: retryAfter}
}

// BotBlocked is a 403 "Forbidden: bot was blocked by the user" fault.
func BotBlocked() Fault {
	return ErrorReply(errBotBlocked.Code, errBotBlocked.Description)
}

// MigrateTo is a 400 fault saying the group became supergroup to.
func MigrateTo(to int64) Fault {
	e := migrated(to)
	return Fault{Action: ActionReply, Code: e.Code, Description: e.Description, MigrateToChatID: to}
}

// BadGateway is the JSON 502 Telegram's front end sends.
func BadGateway() Fault {
	return ErrorReply(errBadGateway.Code, errBadGateway.Description)
}

// BadGatewayHTML is a 502 with nginx's HTML error page as the body, as
// api.telegram.org has answered; clients fail to decode it.
func BadGatewayHTML() Fault {
	return Fault{Action: ActionReply, Code: nginx502Status, Body: string(nginx502Body), ContentType: "text/html"}
}

// Delay is a fault that holds matching calls for d, then answers normally.
func Delay(d time.Duration) Fault { return Fault{Delay: d} }

// AcceptThenDrop is a fault that commits the call, then closes the
// connection without a response.
func AcceptThenDrop() Fault { return Fault{Action: ActionAcceptThenDrop} }

// DropBeforeAccept is a fault that closes the connection without
// committing anything.
func DropBeforeAccept() Fault { return Fault{Action: ActionDropBeforeAccept} }

// AcceptedThen turns an error fault into one that first commits the call, then
// answers with the error: the request took effect and the client cannot know.
func (f Fault) AcceptedThen() Fault { f.Action = ActionAcceptThenReply; return f }

// AcceptThenHang is a fault that commits the call, then never answers.
func AcceptThenHang() Fault { return Fault{Action: ActionAcceptThenHang} }

// For restricts f to method.
func (f Fault) For(method string) Fault { f.Method = method; return f }

// InChat restricts f to calls addressed to chat id.
func (f Fault) InChat(id int64) Fault { f.ChatID = id; return f }

// OnCall makes f first fire on the nth matching call after Inject.
func (f Fault) OnCall(n int) Fault { f.Nth = n; return f }

// Times makes f fire n times.
func (f Fault) Times(n int) Fault { f.Count = n; return f }

// Always makes f fire on every matching call.
func (f Fault) Always() Fault { f.Forever = true; return f }

// WithDelay adds a delay before f's action.
func (f Fault) WithDelay(d time.Duration) Fault { f.Delay = d; return f }

func (f Fault) matches(method string, chatID int64) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, method) {
		return false
	}
	return f.ChatID == 0 || f.ChatID == chatID
}

func (f Fault) reply() reply {
	if f.Body != "" {
		ct := f.ContentType
		if ct == "" {
			ct = "text/html"
		}
		return reply{status: f.Code, contentType: ct, body: []byte(f.Body), description: http.StatusText(f.Code)}
	}
	e := apiError{Code: f.Code, Description: f.Description, RetryAfter: f.RetryAfter, MigrateToChatID: f.MigrateToChatID}
	return e.reply()
}

// Injection is a fault installed on a server.
type Injection struct {
	s       *Server
	fault   Fault
	seen    int
	fired   int
	removed bool
}

// Inject installs f. Faults are tried in injection order; the first one
// due on a call fires. Every fault counts the calls it matches, from the
// moment it is injected, whether or not it fires.
func (s *Server) Inject(f Fault) *Injection {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &Injection{s: s, fault: f}
	s.faults = append(s.faults, in)
	s.notifyLocked()
	return in
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.faults {
		in.removed = true
	}
	s.faults = nil
	s.notifyLocked()
}

// Fired reports how many calls the fault has been applied to.
func (in *Injection) Fired() int {
	in.s.mu.Lock()
	defer in.s.mu.Unlock()
	return in.fired
}

// Remove uninstalls the fault.
func (in *Injection) Remove() {
	in.s.mu.Lock()
	defer in.s.mu.Unlock()
	in.removed = true
	for i, other := range in.s.faults {
		if other == in {
			in.s.faults = append(in.s.faults[:i], in.s.faults[i+1:]...)
			break
		}
	}
	in.s.notifyLocked()
}

// due counts the call and reports whether the fault fires on it.
func (in *Injection) due(method string, chatID int64) bool {
	if in.removed || !in.fault.matches(method, chatID) {
		return false
	}
	in.seen++
	if in.seen < max(in.fault.Nth, 1) {
		return false
	}
	return in.fault.Forever || in.fired < max(in.fault.Count, 1)
}

// pickFault returns the fault to apply to req (the zero Fault if none)
// and records it on the call.
func (s *Server) pickFault(req *request) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	var picked *Injection
	for _, in := range s.faults {
		if in.due(req.method, req.chatID) && picked == nil {
			picked = in
		}
	}
	if picked == nil {
		return Fault{}
	}
	picked.fired++
	c := &s.calls[req.seq-1]
	c.Fault, c.Delay = picked.fault.Action, picked.fault.Delay
	s.notifyLocked()
	return picked.fault
}
