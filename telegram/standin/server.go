// Package standin is a stand-in Telegram Bot API server: countersign demo runs
// the real bot against it, in the process, so that a person sees the card flow
// without a token; the tests run against it too, through telegramtest, which
// adds what only a test needs (NewServer, closed at the test's end). It is
// product code: it imports nothing of the testing packages, and the binary's
// dependency test holds it to that.
//
// It speaks the real wire format over real HTTP (a server on loopback):
// POST /bot<token>/<method> with multipart, urlencoded or JSON bodies, and
// {"ok":...} replies whose shapes and error descriptions come from captured
// Bot API responses kept in testdata. Point a client at it with
// bot.WithServerURL(srv.URL()).
//
// The server keeps the state a bot can observe: the messages it sent (with
// per-chat message ids; text, photos and documents, albums, polls, copies and
// forwards), the messages users wrote, pins, the files it issued ids for
// (uploads are logged by size and SHA-256, not kept in the call log), the
// update queue behind getUpdates long polling and its offset confirmation
// (or, while a webhook is set, delivered by DeliverWebhook to one or several
// receivers), webhook, commands and callback query answers. ClientURL tells apart the calls of processes sharing a server.
// Tests push updates, inject faults (error replies, delays, dropped or hung
// connections), optionally turn on Telegram's flood limits, and wait for
// conditions with WaitFor instead of sleeping.
//
// The bot token is only compared, never logged or recorded.
package standin

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultToken is the token used when Options.Token is empty.
const DefaultToken = "123456:TEST"

// ErrClosed is returned by WaitFor when the server closed before the
// condition held.
var ErrClosed = errors.New("standin: server closed")

// Options configures a Server. The zero value is usable.
type Options struct {
	// Token is the bot token the server accepts; other tokens get 401.
	// Empty means DefaultToken.
	Token string
	// Bot is the user getMe returns and the sender of the bot's messages.
	// Zero fields are filled in: ID from the token, IsBot, a first name and
	// a username.
	Bot User
	// Chats declares the chats that exist. When it is non-empty, calls to
	// any other chat get 400 "chat not found" (a chat also becomes known
	// when a user writes to the bot through PushMessage or
	// PushCallbackQuery). When empty, every chat exists.
	Chats []Chat
	// BlockedChats answer 403 (the user blocked the bot, or the bot was
	// removed from the group).
	BlockedChats []int64
	// MigratedChats maps a group to the supergroup it became; calls to the
	// group answer 400 with parameters.migrate_to_chat_id.
	MigratedChats map[int64]int64
	// Flood turns on Telegram's flood limits for the methods that post
	// messages. Nil is off.
	Flood *FloodLimits
	// Now is the server clock for message dates, flood limits and callback
	// query expiry. Nil means time.Now. Long polling and injected delays
	// always use real time.
	Now func() time.Time
	// FirstUpdateID is the update_id of the first pushed update; 0 means 1.
	FirstUpdateID int64
	// FirstMessageID, when positive, is where every chat's message_ids start,
	// and callback query ids are numbered from it too: a fake started again
	// over a bot's journal (the demo on the same folder) then says nothing the
	// journal takes for a replay of what it already had.
	FirstMessageID int
	// CallbackQueryTTL, when positive, makes answerCallbackQuery fail with
	// "query is too old" for queries older than this.
	CallbackQueryTTL time.Duration
	// Uploads bounds uploaded photos and documents; zero fields take the
	// Bot API's limits (10 MB and 50 MB).
	Uploads UploadLimits
	// Logf, when set, receives one line per call. The token is never part
	// of it.
	Logf func(format string, args ...any)
}

// Server is a fake Bot API server. All methods are safe for concurrent use.
type Server struct {
	srv     *http.Server
	url     string
	token   string
	bot     User
	now     func() time.Time
	logf    func(format string, args ...any)
	done    chan struct{}
	closing sync.Once

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	calls    []Call
	faults   []*Injection
	chats    chatBook
	queue    updateQueue
	webhook  Webhook
	hook     webhookState
	commands []BotCommand
	queries  map[string]time.Time
	queryTTL time.Duration
	answers  []CallbackAnswer
	limiter  *limiter
	files    map[string]*storedFile // by file_id
	urls     map[string][]byte      // SetURLContent
	uploads  UploadLimits
	polls    int
	tooMany  int
	rejected int
	conns    atomic.Int64
}

// Connections counts the connections clients opened to the server: against
// Telegram, each new one costs a TLS handshake.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// New starts a server on loopback. Call Close when done (telegramtest.NewServer
// does, at a test's end).
func New(opts Options) *Server {
	s := newServer(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("standin: listen on loopback: %v", err))
	}
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/file/bot") {
			s.serveFile(w, r)
			return
		}
		s.serveHTTP(w, r)
	})}
	s.srv.ErrorLog = log.New(redactor{s}, "standin: ", 0)
	s.srv.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.conns.Add(1)
		}
	}
	go s.srv.Serve(ln)
	return s
}

func newServer(opts Options) *Server {
	s := &Server{
		token:    opts.Token,
		now:      opts.Now,
		logf:     opts.Logf,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		queries:  map[string]time.Time{},
		queryTTL: opts.CallbackQueryTTL,
		files:    map[string]*storedFile{},
		urls:     map[string][]byte{},
		uploads:  opts.Uploads.withDefaults(),
	}
	if s.token == "" {
		s.token = DefaultToken
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.bot = botUser(opts.Bot, s.token)
	s.chats = newChatBook(opts)
	s.queue.init(opts.FirstUpdateID)
	s.queue.queries = max(opts.FirstMessageID-1, 0)
	if opts.Flood != nil {
		s.limiter = newLimiter(*opts.Flood)
	}
	return s
}

func botUser(u User, token string) User {
	if u.ID == 0 {
		id, _, _ := strings.Cut(token, ":")
		u.ID, _ = strconv.ParseInt(id, 10, 64)
	}
	u.IsBot = true
	if u.FirstName == "" {
		u.FirstName = "Countersign Test"
	}
	if u.Username == "" {
		u.Username = "countersign_test_bot"
	}
	return u
}

// URL is the base URL for bot.WithServerURL, with no trailing slash.
func (s *Server) URL() string { return s.url }

// Token is the token the server accepts.
func (s *Server) Token() string { return s.token }

// Bot is the bot user getMe returns.
func (s *Server) Bot() User { return s.bot }

// Close releases hung and long-polling requests, then shuts the server
// down and waits for its handlers. It is safe to call more than once.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.done)
		s.mu.Lock()
		s.notifyLocked()
		s.mu.Unlock()
		// What hangs was released above; the rest finish, then the
		// connections close.
		s.srv.Shutdown(context.Background())
		s.srv.Close()
	})
}

// notifyLocked wakes every waiter. Call it with s.mu held after any change.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond returns true, ctx ends or the server closes.
// cond runs without the server lock held, so it may call any Server
// method; it is re-evaluated after every change of state.
func (s *Server) WaitFor(ctx context.Context, cond func(*Server) bool) error {
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("standin: condition not met: %w", ctx.Err())
		case <-s.done:
			if cond(s) {
				return nil
			}
			return ErrClosed
		}
	}
}

// WaitTimeout is WaitFor with a deadline of d from now.
func (s *Server) WaitTimeout(d time.Duration, cond func(*Server) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.WaitFor(ctx, cond)
}

// redactor is the http.Server error log; it keeps the token out of it.
type redactor struct{ s *Server }

func (r redactor) Write(p []byte) (int, error) {
	line := strings.ReplaceAll(strings.TrimRight(string(p), "\n"), r.s.token, "<token>")
	if r.s.logf != nil {
		r.s.logf("%s", line)
	} else {
		log.Print(line)
	}
	return len(p), nil
}

func (s *Server) log(format string, args ...any) {
	if s.logf == nil {
		return
	}
	s.logf("standin: %s", strings.ReplaceAll(fmt.Sprintf(format, args...), s.token, "<token>"))
}
