// Package review is the review page: an approval's whole payload, every byte
// that will leave as its recipient will meet it, served over HTTP to the
// approvers of that approval only, with Approve, Reject and Edit bound to the
// approval and the payload hash the page showed. It is opened as a Telegram
// Mini App from a card's web_app button (the person proven by the init data
// Telegram signs with the bot's token) or from a /review link in any browser
// (proven by an HMAC of approval, payload hash and person under a key the
// token derives). A decision goes through the command handler exactly as a tap
// does: the page is a surface, and the journal hears of it only from there.
package review

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/policy"
)

// Path is where the page is served: PATH/<approval id>.
const Path = "/review"

// PageURL is the page of approval apID under base, the public address the
// server is reached at (-review-url).
func PageURL(base, apID string) string {
	return strings.TrimSuffix(base, "/") + Path + "/" + url.PathEscape(apID)
}

// Options are what a Server serves from.
type Options struct {
	// Handler carries out decisions and reads approvals (required).
	Handler *command.Handler
	// Token is the bot's token: it checks init data and derives the keys.
	Token string
	// Files holds the payloads' files; nil shows none of their contents.
	Files Files
	// TelegramScript is the address of Telegram's Mini App script, loaded by
	// the page; "" loads none, and the page reads the init data from its
	// address (#tgWebAppData), where Telegram puts it too.
	TelegramScript string
	// Audience names the chat a payload reaches as its members know it
	// (title and type), as the card does; nil shows what the payload binds
	// (Payload.Audience), else the chat's id alone.
	Audience func(ctx context.Context, p action.Payload, chat string) string
	Logger   *slog.Logger
	// Passkeys is the relying party of the page's passkeys (its address,
	// -review-url); nil serves no passkey ceremony (passkey.go).
	Passkeys *passkey.RP
	// Now is the clock init data is judged by; nil is the wall clock.
	Now func() time.Time
}

// Files is where the payloads' files are read from (a filestore.Store): the
// bytes stored under their SHA-256, checked against it.
type Files interface {
	Open(ctx context.Context, sum string) ([]byte, error)
}

// DefaultTelegramScript is Telegram's Mini App script.
const DefaultTelegramScript = "https://telegram.org/js/telegram-web-app.js"

// Server serves the page.
type Server struct {
	opts Options
	keys Keys
	mux  *http.ServeMux
	log  *slog.Logger
}

// New returns the page's server.
func New(o Options) *Server {
	s := &Server{opts: o, keys: NewKeys(o.Token), mux: http.NewServeMux(), log: o.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.mux.HandleFunc("GET "+Path+"/page.js", s.script)
	s.mux.HandleFunc("GET "+Path+"/{approval}", s.page)
	s.mux.HandleFunc("POST "+Path+"/api/show", s.show)
	s.mux.HandleFunc("POST "+Path+"/api/decide", s.decide)
	s.mux.HandleFunc("GET "+Path+"/file/{approval}/{sha}", s.file)
	s.routePasskeys()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// prefix is the page's own folder, as its addresses name it: relative, so that
// the page works under whatever path a proxy serves it.
func (s *Server) prefix() string { return "." }

// Linker makes /review's links: it is the command handler's Reviewer.
type Linker struct {
	Keys Keys
	// Base is the public address of the page's server (-review-url).
	Base string
}

// ReviewLink is the page of approval apID for user, with the link's
// credential in its fragment.
func (l Linker) ReviewLink(apID, sha string, user policy.UserID) string {
	return PageURL(l.Base, apID) + "#link=" + l.Keys.MakeLink(apID, sha, user).String()
}

var _ command.Reviewer = Linker{}

//go:embed page.html
var pageHTML string

//go:embed page.js
var pageJS string

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	csp := "default-src 'none'; script-src 'self'"
	tg := ""
	if s.opts.TelegramScript != "" {
		if u, err := url.Parse(s.opts.TelegramScript); err == nil {
			csp += " " + u.Scheme + "://" + u.Host
		}
		tg = `<script src="` + html.EscapeString(s.opts.TelegramScript) + `"></script>`
	}
	csp += "; connect-src 'self'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, strings.Replace(pageHTML, "<!--telegram-->", tg, 1))
}

func (s *Server) script(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	fmt.Fprint(w, pageJS)
}

// request is what the page posts: the approval, the person's credential, and
// for a decision the hash the page showed and what was decided.
type request struct {
	Approval string `json:"approval"`
	InitData string `json:"init_data,omitempty"`
	Link     string `json:"link,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Decision string `json:"decision,omitempty"` // approve, reject, edit
	Text     string `json:"text,omitempty"`     // edit: the new text
	// Credential is a passkey's assertion (PublicKeyCredential's toJSON).
	Credential json.RawMessage `json:"credential,omitempty"`
	// Code is the approver's TOTP code, for an approval that asks one and
	// for every approval from a link that asks no passkey.
	Code string `json:"code,omitempty"`
}

// answer is what the page is told.
type answer struct {
	HTML     string `json:"html,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Text     string `json:"text,omitempty"`
	Editable bool   `json:"editable,omitempty"`
	Via      string `json:"via,omitempty"`
	// Code asks the page for the approver's TOTP code beside Approve.
	Code bool   `json:"code,omitempty"`
	Said string `json:"said,omitempty"`
	// Done says the decision was recorded: false when it was refused (a
	// wrong code) or waits on more (a quorum's vote), and the page's buttons
	// stay.
	Done  bool   `json:"done,omitempty"`
	Error string `json:"error,omitempty"`
	// StepUp is the second factor the operator asks of the approval now
	// ("passkey": the page approves with one, in a browser).
	StepUp policy.Factor `json:"step_up,omitempty"`
	Link   string        `json:"link,omitempty"` // the approver's /review link, for the browser
}

// A refusal is an answer the page shows instead of the payload or decision.
type refusal struct {
	status int
	words  string // for the person
	why    error  // for the log: never a credential
}

func (r *refusal) Error() string { return r.words }

func refuse(status int, words string, why error) *refusal {
	return &refusal{status: status, words: words, why: why}
}

// person is who a request is from, proven.
type person struct {
	user policy.UserID
	name string
	via  string // "telegram" or "link"
	link Link
}

// authenticate proves who sent req: its init data or its link.
func (s *Server) authenticate(req request) (person, *refusal) {
	switch {
	case req.InitData != "":
		d, err := CheckInitData(req.InitData, s.keys.token, s.now())
		switch {
		case errors.Is(err, ErrExpired):
			return person{}, refuse(http.StatusForbidden, "This page was opened more than 30 minutes ago: open it again from its card.", err)
		case err != nil:
			return person{}, refuse(http.StatusForbidden, "Telegram's proof of who you are does not check: open the page from its card in Telegram.", err)
		}
		return person{user: d.UserID(), name: d.User.Name(), via: "telegram"}, nil
	case req.Link != "":
		l, err := ParseLink(req.Link)
		if err == nil {
			err = s.keys.CheckLink(req.Approval, l)
		}
		if err != nil {
			return person{}, refuse(http.StatusForbidden, "This link was not made by this bot for this approval: ask for one with /review.", err)
		}
		return person{user: l.User, name: fmt.Sprintf("user %d (review link)", l.User), via: "link", link: l}, nil
	}
	return person{}, refuse(http.StatusUnauthorized, "Open this page from the 🔎 Whole payload button on its card, or from a /review link.", errors.New("no credential"))
}

// pending is approval apID as an approver must see it, while it waits.
func (s *Server) pending(ctx context.Context, apID string) (command.Approval, *refusal) {
	h := s.opts.Handler
	ja, err := h.Journal.Approval(ctx, apID)
	if errors.Is(err, journal.ErrNotFound) {
		return command.Approval{}, refuse(http.StatusNotFound, "This approval is not known.", err)
	}
	if err != nil {
		return command.Approval{}, refuse(http.StatusInternalServerError, "The journal could not be read; nothing was decided.", err)
	}
	if ja.Decision != journal.Pending {
		return command.Approval{}, refuse(http.StatusConflict, fmt.Sprintf("Already %s: nothing more to decide here.", ja.Decision), errors.New("decided"))
	}
	a, err := h.Approval(ctx, ja.OperationID)
	if err != nil || a.ID != apID {
		return command.Approval{}, refuse(http.StatusConflict, "This approval waits no more.", fmt.Errorf("not the pending approval: %v", err))
	}
	return a, nil
}

// open authenticates req and reads its approval, which the person must be
// shown (an approver of it) and, with a link, whose payload the link names.
func (s *Server) open(ctx context.Context, req request) (command.Approval, person, *refusal) {
	who, no := s.authenticate(req)
	if no != nil {
		return command.Approval{}, who, no
	}
	a, no := s.pending(ctx, req.Approval)
	if no != nil {
		return a, who, no
	}
	if !a.Shows(who.user) {
		return a, who, refuse(http.StatusForbidden, "You are not an approver of this request.", fmt.Errorf("user %d is not an approver of %s", who.user, a.ID))
	}
	if who.via == "link" && who.link.SHA256 != a.PayloadSHA256 {
		return a, who, refuse(http.StatusConflict, "The payload changed since this link was made: ask for a new one with /review.", errors.New("link of another payload"))
	}
	return a, who, nil
}

// maxRequest bounds what the page posts (an edit's text included).
const maxRequest = 64 << 10

func (s *Server) read(w http.ResponseWriter, r *http.Request) (request, bool) {
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest)).Decode(&req); err != nil || req.Approval == "" {
		s.reply(w, r, request{}, nil, refuse(http.StatusBadRequest, "The page sent a request this server does not read.", fmt.Errorf("bad request: %v", err)))
		return req, false
	}
	return req, true
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	a, who, no := s.open(r.Context(), req)
	if no != nil {
		s.reply(w, r, req, nil, no)
		return
	}
	html, err := render(s.viewOf(r.Context(), a))
	if err != nil {
		s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The payload could not be shown.", err))
		return
	}
	s.reply(w, r, req, &answer{HTML: html, SHA256: a.PayloadSHA256, Text: a.Operation.Payload.Text, Editable: a.Editable, Via: who.via,
		StepUp: a.Factor, Code: asksCode(a, who)}, nil)
}

// decideWait bounds how long a decision's answer may take: an approval commits
// before it is answered.
const decideWait = 2 * time.Minute

func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	a, who, no := s.open(ctx, req)
	if no == nil && (req.SHA256 != a.PayloadSHA256 || req.SHA256 != a.Operation.PayloadSHA256) {
		no = refuse(http.StatusConflict, "The payload changed since this page showed it: nothing was decided. Reload to see it as it is now.", errors.New("stale payload hash"))
	}
	if no != nil {
		s.reply(w, r, req, nil, no)
		return
	}
	httpserve.Hold(w, decideWait)
	ctx = context.WithoutCancel(ctx) // a decision recorded is carried out, whoever stops listening
	var said string
	done := false
	switch {
	case req.Decision == "approve" && asksCode(a, who):
		if strings.TrimSpace(req.Code) == "" {
			s.reply(w, r, req, nil, refuse(http.StatusBadRequest, codeNeeded(who), errors.New("no code")))
			return
		}
		tr, err := s.opts.Handler.Confirm(ctx, command.Confirmation{User: who.user, Name: who.name, Approval: a.ID, Code: strings.TrimSpace(req.Code),
			Answer: func(text string) { said = text }})
		if err != nil {
			s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The bot could not record this decision; nothing was sent.", err))
			return
		}
		if tr.Close != "" {
			said, done = tr.Close, true
		}
	case req.Decision == "approve" || req.Decision == "reject":
		button := command.Approve
		if req.Decision == "reject" {
			button = command.Reject
		}
		tr, err := s.opts.Handler.Tap(ctx, command.Tap{User: who.user, Name: who.name, Button: button, Ref: a.ID,
			Answer: func(text string) { said = text }})
		if err != nil {
			s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The bot could not record this decision; nothing was sent.", err))
			return
		}
		switch {
		case tr.Close != "":
			said, done = tr.Close, true
		case tr.StepUp != nil:
			said = tr.StepUp.Text
		}
	case req.Decision == "edit":
		rep, err := s.opts.Handler.Amend(ctx, a.ID, who.user, req.Text)
		if err != nil {
			s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The bot could not record this edit.", err))
			return
		}
		said, done = rep.Text, true
	default:
		s.reply(w, r, req, nil, refuse(http.StatusBadRequest, "Approve, reject or edit: nothing else is decided here.", errors.New("unknown decision")))
		return
	}
	s.log.Info("review page decision", "approval", a.ID, "user", who.user, "via", who.via, "decision", req.Decision)
	s.reply(w, r, req, &answer{Said: said, SHA256: a.PayloadSHA256, Done: done}, nil)
}

// asksCode reports whether approving a from the page takes its approver's
// TOTP code: when the operator asks it of a now (step_up: totp), and from a
// link, which proves only that its holder could read the approver's chat,
// unless a passkey is asked, which proves more.
func asksCode(a command.Approval, who person) bool {
	return who.via == "link" && a.Factor != policy.FactorPasskey || a.Factor == policy.FactorTOTP
}

// codeNeeded says why a code is asked.
func codeNeeded(who person) string {
	if who.via == "link" {
		return "Approving from a link takes the code from your authenticator app: type it beside Approve."
	}
	return "This approval asks for a second factor: type the code from your authenticator app beside Approve."
}

// reply writes an answer or a refusal; a refusal is logged with its reason,
// never with the init data or the link.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, req request, a *answer, no *refusal) {
	status := http.StatusOK
	if no != nil {
		status, a = no.status, &answer{Error: no.words}
		s.log.Warn("review page refused", "path", r.URL.Path, "approval", req.Approval, "status", status, "why", no.why.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(a)
}

// file serves a file of an approval to an address the page was given.
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	apID, sha := r.PathValue("approval"), r.PathValue("sha")
	until, err := strconv.ParseInt(r.URL.Query().Get("until"), 10, 64)
	mac := r.URL.Query().Get("mac")
	if err != nil || s.now().Unix() > until || !equal(mac, s.keys.fileMAC(apID, sha, until)) || s.opts.Files == nil {
		s.log.Warn("review page refused", "path", Path+"/file", "approval", apID, "status", http.StatusForbidden, "why", "file address not made by this bot, or past its time")
		http.Error(w, "This file's address is not good (or no longer): reload the page.", http.StatusForbidden)
		return
	}
	b, err := s.opts.Files.Open(r.Context(), sha)
	if err != nil {
		http.Error(w, "The file cannot be read.", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", http.DetectContentType(b))
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.Write(b)
}
