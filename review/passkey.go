package review

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/policy"
)

// Passkeys on the review page (policy step_up: passkey). An approver enrols
// from a one-time link printed on the machine (EnrolURL, made by `countersign
// approver passkey`), and approves in a browser opened from a /review link:
// the page asks the server for the options of an assertion whose challenge
// commits to the approval and the payload hash it showed, the browser's
// WebAuthn signs it with the passkey, and the server checks it (passkey.RP)
// and records the vote with its receipt through the command handler's
// Confirm, where the journal checks it again. WebAuthn does not run in
// Telegram's Mini App view: there the page opens the approver's /review link
// in the phone's browser, and says so.

// EnrolPath is the enrolment page; its one-time token travels in the
// fragment (#t=TOKEN), which no server log or Referer holds.
const EnrolPath = Path + "/passkey/enrol"

// EnrolURL is the enrolment link of token under base (-review-url).
func EnrolURL(base, token string) string {
	return strings.TrimSuffix(base, "/") + EnrolPath + "#t=" + token
}

//go:embed enrol.html
var enrolHTML string

//go:embed enrol.js
var enrolJS string

// routePasskeys adds the passkey pages and calls to s.
func (s *Server) routePasskeys() {
	s.mux.HandleFunc("GET "+Path+"/passkey.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprint(w, passkey.Script)
	})
	s.mux.HandleFunc("GET "+EnrolPath+".js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		fmt.Fprint(w, enrolJS)
	})
	s.mux.HandleFunc("GET "+EnrolPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, enrolHTML)
	})
	s.mux.HandleFunc("POST "+Path+"/api/passkey/enrol/begin", s.enrolBegin)
	s.mux.HandleFunc("POST "+Path+"/api/passkey/enrol/finish", s.enrolFinish)
	s.mux.HandleFunc("POST "+Path+"/api/passkey/begin", s.passkeyBegin)
	s.mux.HandleFunc("POST "+Path+"/api/passkey/finish", s.passkeyFinish)
	s.mux.HandleFunc("POST "+Path+"/api/passkey/browser", s.passkeyBrowser)
}

// enrolment is what the enrolment page posts.
type enrolment struct {
	Token      string          `json:"token"`
	Credential json.RawMessage `json:"credential,omitempty"`
}

func (s *Server) readEnrolment(w http.ResponseWriter, r *http.Request) (enrolment, policy.UserID, []byte, bool) {
	var e enrolment
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest)).Decode(&e); err != nil || e.Token == "" {
		s.reply(w, r, request{}, nil, refuse(http.StatusBadRequest, "This page was not opened from an enrolment link.", fmt.Errorf("bad enrolment request: %v", err)))
		return e, 0, nil, false
	}
	if s.opts.Passkeys == nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusNotFound, "Passkeys are not enabled on this bot.", errors.New("no relying party")))
		return e, 0, nil, false
	}
	user, session, err := s.opts.Handler.Journal.PasskeyLink(r.Context(), e.Token)
	if err != nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusForbidden, "This enrolment link was used already, has expired, or was never made: make a new one on the machine with countersign approver passkey.", err))
		return e, 0, nil, false
	}
	return e, user, session, true
}

func (s *Server) enrolBegin(w http.ResponseWriter, r *http.Request) {
	e, user, _, ok := s.readEnrolment(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	enrolled, err := s.credentials(ctx, user)
	if err != nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusInternalServerError, "The journal could not be read.", err))
		return
	}
	options, begun, err := s.opts.Passkeys.BeginEnrol(int64(user), fmt.Sprintf("Countersign approver %d", user), enrolled)
	if err == nil {
		var session []byte
		if session, err = json.Marshal(begun); err == nil {
			err = s.opts.Handler.Journal.BeginPasskeyLink(ctx, e.Token, session)
		}
	}
	if err != nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusInternalServerError, "The enrolment could not begin.", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(options)
}

func (s *Server) enrolFinish(w http.ResponseWriter, r *http.Request) {
	e, user, session, ok := s.readEnrolment(w, r)
	if !ok {
		return
	}
	var begun passkey.Enrolment
	if err := json.Unmarshal(session, &begun); err != nil || session == nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusConflict, "Begin the enrolment first.", fmt.Errorf("no enrolment begun: %v", err)))
		return
	}
	c, err := s.opts.Passkeys.FinishEnrol(begun, fmt.Sprintf("Countersign approver %d", user), e.Credential)
	if err != nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusForbidden, "This passkey was not enrolled: "+err.Error(), err))
		return
	}
	spki, err := passkey.SPKI(c.PublicKey)
	cred := journal.PasskeyCredential{User: user, ID: c.ID, PublicKey: c.PublicKey,
		SPKI: spki, Algorithm: c.Algorithm, RPID: s.opts.Passkeys.ID, Counter: c.Counter, Backup: c.Backup}
	if err == nil {
		err = s.opts.Handler.Journal.FinishPasskeyLink(r.Context(), e.Token, cred)
	}
	if err != nil {
		s.reply(w, r, request{}, nil, refuse(http.StatusConflict, "This passkey was not enrolled: the link was used meanwhile, or the journal could not be written.", err))
		return
	}
	key := cred.Key()
	s.log.Info("passkey enrolled", "user", user, "credential", key.Credential)
	s.reply(w, r, request{}, &answer{Said: fmt.Sprintf("Enrolled: a passkey of user %d for %s. Its key's SHA-256 fingerprint is %s; audit verify lists the same.",
		user, s.opts.Passkeys.ID, key.Fingerprint())}, nil)
}

// credentials are user's passkeys as the passkey package takes them.
func (s *Server) credentials(ctx context.Context, user policy.UserID) ([]passkey.Credential, error) {
	cs, err := s.opts.Handler.Journal.Passkeys(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]passkey.Credential, len(cs))
	for i, c := range cs {
		out[i] = passkey.Credential{User: int64(c.User), ID: c.ID, PublicKey: c.PublicKey, Algorithm: c.Algorithm, Counter: c.Counter, Backup: c.Backup, Enrolled: c.Enrolled}
	}
	return out, nil
}

// openPasskey is open for a passkey ceremony: in a browser, from a link, on
// the payload the page showed.
func (s *Server) openPasskey(ctx context.Context, req request) (command.Approval, person, []passkey.Credential, *refusal) {
	if s.opts.Passkeys == nil {
		return command.Approval{}, person{}, nil, refuse(http.StatusNotFound, "Passkeys are not enabled on this bot.", errors.New("no relying party"))
	}
	a, who, no := s.open(ctx, req)
	switch {
	case no != nil:
		return a, who, nil, no
	case who.via != "link":
		return a, who, nil, refuse(http.StatusForbidden, "Passkeys do not work inside Telegram: open this approval in your phone's browser.", errors.New("a passkey asked from the Mini App"))
	case req.SHA256 != a.PayloadSHA256 || req.SHA256 != a.Operation.PayloadSHA256:
		return a, who, nil, refuse(http.StatusConflict, "The payload changed since this page showed it: nothing was decided. Reload to see it as it is now.", errors.New("stale payload hash"))
	}
	creds, err := s.credentials(ctx, who.user)
	if err != nil {
		return a, who, nil, refuse(http.StatusInternalServerError, "The journal could not be read; nothing was decided.", err)
	}
	if len(creds) == 0 {
		return a, who, nil, refuse(http.StatusConflict, fmt.Sprintf("You have no passkey enrolled: ask for an enrolment link on the machine (countersign approver passkey %d).", who.user), passkey.ErrNoKey)
	}
	return a, who, creds, nil
}

func (s *Server) passkeyBegin(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	a, who, creds, no := s.openPasskey(r.Context(), req)
	if no != nil {
		s.reply(w, r, req, nil, no)
		return
	}
	options, err := s.opts.Passkeys.BeginApproval(int64(who.user), a.ID, a.PayloadSHA256, creds)
	if err != nil {
		s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The passkey could not be asked.", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(options)
}

func (s *Server) passkeyFinish(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	a, who, creds, no := s.openPasskey(ctx, req)
	if no != nil {
		s.reply(w, r, req, nil, no)
		return
	}
	as, err := passkey.ParseAssertion(req.Credential)
	var approved passkey.Approved
	if err == nil {
		approved, err = s.opts.Passkeys.FinishApproval(int64(who.user), a.ID, a.PayloadSHA256, creds, as)
	}
	switch {
	case errors.Is(err, passkey.ErrCounter):
		s.reply(w, r, req, nil, refuse(http.StatusForbidden, "Refused: this passkey's signature counter did not move on (a replayed assertion, or a cloned authenticator). Nothing was decided.", err))
		return
	case err != nil:
		s.reply(w, r, req, nil, refuse(http.StatusForbidden, "Refused: the passkey's assertion does not prove this approval of this payload. Nothing was decided.", err))
		return
	}
	httpserve.Hold(w, decideWait)
	ctx = context.WithoutCancel(ctx) // a decision recorded is carried out, whoever stops listening
	var said string
	tr, err := s.opts.Handler.Confirm(ctx, command.Confirmation{User: who.user, Name: who.name, Approval: a.ID, Receipt: &approved.Receipt,
		Answer: func(text string) { said = text }})
	if err != nil {
		s.reply(w, r, req, nil, refuse(http.StatusInternalServerError, "The bot could not record this approval; nothing was sent.", err))
		return
	}
	if tr.Close != "" {
		said = tr.Close
	}
	s.log.Info("review page decision", "approval", a.ID, "user", who.user, "via", "passkey", "decision", "approve")
	s.reply(w, r, req, &answer{Said: said, SHA256: a.PayloadSHA256}, nil)
}

// passkeyBrowser gives the Mini App the approver's /review link, for the page
// to open in the phone's browser, where WebAuthn runs.
func (s *Server) passkeyBrowser(w http.ResponseWriter, r *http.Request) {
	req, ok := s.read(w, r)
	if !ok {
		return
	}
	a, who, no := s.open(r.Context(), req)
	if no == nil && s.opts.Handler.Reviewer == nil {
		no = refuse(http.StatusNotFound, "This bot makes no browser links.", errors.New("no reviewer"))
	}
	if no != nil {
		s.reply(w, r, req, nil, no)
		return
	}
	s.reply(w, r, req, &answer{Link: s.opts.Handler.Reviewer.ReviewLink(a.ID, a.PayloadSHA256, who.user)}, nil)
}
