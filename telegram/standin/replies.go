package standin

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// testdata holds real Bot API responses; error replies take their
// descriptions from these files.
//
//go:embed testdata/*.json testdata/*.txt
var testdata embed.FS

// apiError is a Bot API error reply.
type apiError struct {
	Code            int
	Description     string
	RetryAfter      int
	MigrateToChatID int64
}

// envelope is the Bot API response object.
type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *parameters     `json:"parameters,omitempty"`
}

type parameters struct {
	MigrateToChatID int64 `json:"migrate_to_chat_id,omitempty"`
	RetryAfter      int   `json:"retry_after,omitempty"`
}

// reply is a response ready to be written.
type reply struct {
	status      int
	contentType string
	body        []byte
	description string
	// committed names the messages the call created or changed, if any.
	committed []msgRef
}

type msgRef struct {
	chatID    int64
	messageID int
}

func mustFixture(name string) []byte {
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		panic(fmt.Sprintf("standin: fixture %s: %v", name, err))
	}
	return b
}

func fixtureError(name string) apiError {
	var env envelope
	if err := json.Unmarshal(mustFixture(name), &env); err != nil || env.OK {
		panic(fmt.Sprintf("standin: fixture %s is not an error reply: %v", name, err))
	}
	e := apiError{Code: env.ErrorCode, Description: env.Description}
	if env.Parameters != nil {
		e.RetryAfter = env.Parameters.RetryAfter
		e.MigrateToChatID = env.Parameters.MigrateToChatID
	}
	return e
}

// fixtureHTTP reads a fixture holding a raw HTTP response (status line,
// headers, blank line, body) and returns its status and body.
func fixtureHTTP(name string) (int, []byte) {
	raw := mustFixture(name)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		panic(fmt.Sprintf("standin: fixture %s: %v", name, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		panic(fmt.Sprintf("standin: fixture %s: %v", name, err))
	}
	return resp.StatusCode, body
}

var (
	errUnauthorized   = fixtureError("error_401_unauthorized.json")
	errChatNotFound   = fixtureError("error_400_chat_not_found.json")
	errMessageTooLong = fixtureError("error_400_message_too_long.json")
	errMigrated       = fixtureError("error_400_migrate_to_chat_id.json")
	errNotModified    = fixtureError("error_400_message_not_modified.json")
	errBotBlocked     = fixtureError("error_403_bot_blocked.json")
	errConflict       = fixtureError("error_409_conflict_getupdates.json")
	errTooMany        = fixtureError("error_429_too_many_requests.json")
	errBadGateway     = fixtureError("error_502_bad_gateway.json")
	errNotFound       = apiError{Code: http.StatusNotFound, Description: "Not Found"}
	// errEntityTooLarge is what the Bot API answers to an upload over its
	// limits (reported by teloxide, telegraf and botgram users as JSON 413
	// "Request Entity Too Large"; nginx in front of it answers bodies far over
	// the limit with an HTML page of the same status).
	errEntityTooLarge = apiError{Code: http.StatusRequestEntityTooLarge, Description: "Request Entity Too Large"}

	nginx502Status, nginx502Body = fixtureHTTP("http_502_nginx_html.txt")
)

// notModifiedDetail is what current servers append to the short
// "message is not modified" description kept in the fixture.
const notModifiedDetail = ": specified new message content and reply markup are exactly " +
	"the same as a current content and reply markup of the message"

func badRequest(format string, args ...any) apiError {
	return apiError{Code: http.StatusBadRequest, Description: "Bad Request: " + fmt.Sprintf(format, args...)}
}

func tooManyRequests(retryAfter int) apiError {
	prefix, _, _ := strings.Cut(errTooMany.Description, "retry after ")
	return apiError{
		Code:        http.StatusTooManyRequests,
		Description: fmt.Sprintf("%sretry after %d", prefix, retryAfter),
		RetryAfter:  retryAfter,
	}
}

func migrated(to int64) apiError {
	e := errMigrated
	e.MigrateToChatID = to
	return e
}

func notModified() apiError {
	e := errNotModified
	e.Description += notModifiedDetail
	return e
}

func (e apiError) reply() reply {
	env := envelope{OK: false, ErrorCode: e.Code, Description: e.Description}
	if e.RetryAfter != 0 || e.MigrateToChatID != 0 {
		env.Parameters = &parameters{RetryAfter: e.RetryAfter, MigrateToChatID: e.MigrateToChatID}
	}
	body, _ := json.Marshal(env)
	return reply{status: e.Code, contentType: "application/json", body: body, description: e.Description}
}

// okReply wraps result in {"ok":true,"result":...}.
func okReply(result any) reply {
	raw, err := json.Marshal(result)
	if err != nil {
		panic(fmt.Sprintf("standin: encode result: %v", err))
	}
	body, _ := json.Marshal(envelope{OK: true, Result: raw})
	return reply{status: http.StatusOK, contentType: "application/json", body: body}
}

func writeReply(w http.ResponseWriter, rep reply) {
	w.Header().Set("Content-Type", rep.contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(rep.body)))
	w.WriteHeader(rep.status)
	_, _ = w.Write(rep.body)
}
