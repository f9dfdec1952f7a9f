package demo

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/telegram/standin"
)

// page is the web page: HTML, script and style, with no asset from elsewhere,
// so that it works offline and its policy allows nothing but this server.
//
//go:embed page/index.html page/page.js page/page.css
var page embed.FS

// ViewWait is how long a request for the view waits for a change before it
// answers with the same view: under the server's write limit, and short
// enough that a page whose server went away notices soon.
const ViewWait = 20 * time.Second

// maxBody bounds a request's JSON: a message's text is at most 4096
// characters.
const maxBody = 64 << 10

// Handler serves the demo's web page and the JSON it runs on:
//
//	GET  /                 the page (and /page.js, /page.css)
//	GET  /api/view?after=K the View, at once when its key is not K, else
//	                       after its next change or ViewWait
//	POST /api/say          {"text": "...", "reply_to": 0}: the person writes
//	POST /api/tap          {"chat": 111, "message": 5, "data": "..."}: the person taps
//	POST /api/lose         LoseNextAnswer
//
// The page has no login, so the handler answers only requests addressed to a
// loopback host name (a page elsewhere that renames its own host to this
// address gets nothing), and a POST only with a JSON body and, when the
// browser names its origin, from this page's own: a form on another site
// cannot act as the person.
func (s *Scene) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", asset("page/index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /page.js", asset("page/page.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /page.css", asset("page/page.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /api/view", s.serveView)
	mux.HandleFunc("POST /api/say", s.serveSay)
	mux.HandleFunc("POST /api/tap", s.serveTap)
	mux.HandleFunc("POST /api/lose", s.serveLose)
	mux.HandleFunc("GET /webapp", s.serveWebApp)
	mux.HandleFunc(review.Path+"/", s.serveReview)
	return guard(mux)
}

// MountReview serves h, the bot's review page, under review.Path: the demo's
// cards open it (🔎 Whole payload) at the page's own address.
func (s *Scene) MountReview(h http.Handler) { s.review.Store(&h) }

func (s *Scene) serveReview(w http.ResponseWriter, r *http.Request) {
	h := s.review.Load()
	if h == nil {
		http.Error(w, "the review page is not served yet", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// serveWebApp opens a card's Mini App as Telegram does: it sends the browser
// to the review page (?to=, a path under review.Path) with init data this
// demo's Telegram signs for the person in the address's fragment
// (#tgWebAppData), where Telegram puts it.
func (s *Scene) serveWebApp(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("to")
	if !strings.HasPrefix(to, review.Path+"/") || strings.ContainsAny(to, "?#\\") || strings.Contains(to, "//") {
		http.Error(w, "a Mini App of the demo is a page under "+review.Path+"/", http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, to+"#"+s.WebAppFragment(), http.StatusSeeOther)
}

// WebAppFragment is the fragment Telegram adds to a Mini App's address: the
// init data for the person, signed now with the demo Telegram's token.
func (s *Scene) WebAppFragment() string {
	init := review.SignInitData(s.Server.Token(), review.InitUser{ID: s.You, FirstName: "You"}, time.Now(),
		map[string]string{"chat_type": "sender", "chat_instance": "1"})
	return url.Values{"tgWebAppData": {init}, "tgWebAppVersion": {"8.0"}, "tgWebAppPlatform": {"weba"}}.Encode()
}

// guard refuses what the page's own requests never are (see Handler).
func guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "the demo answers on a loopback address only", http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost {
			if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
				http.Error(w, "a JSON body is expected", http.StatusUnsupportedMediaType)
				return
			}
			if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
				http.Error(w, "only the demo's own page may act", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether the Host header names this machine by a
// loopback address or as localhost.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "http" && strings.EqualFold(u.Host, host)
}

// asset serves an embedded file of the page as contentType.
func asset(name, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := page.ReadFile(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Write(b)
	}
}

// viewReply is the answer of GET /api/view.
type viewReply struct {
	// Key names the view: the page asks for the next one after it.
	Key  string `json:"key"`
	View View   `json:"view"`
}

func (s *Scene) serveView(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	v, key, err := s.keyed()
	if err == nil && key == after {
		ctx, cancel := context.WithTimeout(r.Context(), ViewWait)
		defer cancel()
		err = s.Server.WaitFor(ctx, func(*standin.Server) bool {
			_, now, err := s.keyed()
			return err != nil || now != after
		})
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil // nothing changed: the page asks again
		}
		if err == nil {
			v, key, err = s.keyed()
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, viewReply{Key: key, View: v})
}

// keyed is the view and its key.
func (s *Scene) keyed() (View, string, error) {
	v, err := s.View()
	if err != nil {
		return View{}, "", err
	}
	sum := sha256.Sum256([]byte(fingerprint(v)))
	return v, hex.EncodeToString(sum[:12]), nil
}

func (s *Scene) serveSay(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text    string `json:"text"`
		ReplyTo int    `json:"reply_to"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		http.Error(w, "nothing to say", http.StatusBadRequest)
		return
	}
	s.Say(req.Text, req.ReplyTo)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Scene) serveTap(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Chat    int64  `json:"chat"`
		Message int    `json:"message"`
		Data    string `json:"data"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if req.Chat != s.You && req.Chat != s.Target || req.Message <= 0 || req.Data == "" {
		http.Error(w, "a tap names a chat of the demo, a message and a button's data", http.StatusBadRequest)
		return
	}
	s.Tap(req.Chat, req.Message, req.Data)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Scene) serveLose(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if !readJSON(w, r, &req) {
		return
	}
	s.LoseNextAnswer() // armed already is as good
	w.WriteHeader(http.StatusNoContent)
}

// readJSON decodes r's body into v, or answers 400 and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
