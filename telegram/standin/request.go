package standin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxBody bounds how much of a request body the server reads.
const maxBody = 64 << 20

// request is a routed call: the method and its parameters.
type request struct {
	method string // as in the path
	params map[string]string
	files  map[string]upload // multipart file parts, by field name
	chatID int64             // chat_id when it names a chat, else 0
	seq    int               // index of the Call record + 1
}

// upload is one multipart file part: the file name the client gave and the
// bytes. Only its size and digest reach the call log.
type upload struct {
	name string
	data []byte
}

// record describes an upload for the call log.
func (u upload) record() Upload {
	sum := sha256.Sum256(u.data)
	return Upload{FileName: u.name, Size: len(u.data), SHA256: hex.EncodeToString(sum[:])}
}

// route splits "/bot<token>/<method>", or "/<client>/bot<token>/<method>" (a
// ClientURL), and checks the token. It returns the method name and the client,
// or an error reply for a wrong token or a malformed path.
func (s *Server) route(path string) (method, client string, _ *reply) {
	if name, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/"); ok && !strings.HasPrefix(name, "bot") {
		client, path = name, "/"+rest
	}
	method, rep := s.routeBot(path)
	return method, client, rep
}

// ClientURL is URL for a client named name: its calls are served as any others,
// and recorded with Call.Client set to name, so that several processes sharing
// one server can be told apart. name must not begin with "bot" nor hold a slash.
func (s *Server) ClientURL(name string) string { return s.url + "/" + name }

func (s *Server) routeBot(path string) (string, *reply) {
	rest, ok := strings.CutPrefix(path, "/bot")
	if !ok {
		rep := errNotFound.reply()
		return "", &rep
	}
	token, method, ok := strings.Cut(rest, "/")
	if token != s.token {
		rep := errUnauthorized.reply()
		return "", &rep
	}
	method = strings.TrimPrefix(method, "test/")
	if !ok || method == "" || strings.Contains(method, "/") {
		rep := errNotFound.reply()
		return "", &rep
	}
	return method, nil
}

// errBodyTooLarge is a request body over maxBody.
var errBodyTooLarge = errors.New("request body too large")

// readParams collects the call's parameters from the query string and from
// a multipart, urlencoded or JSON body, and the file parts of a multipart one.
// An empty body is no parameters, whatever its Content-Type says
// (go-telegram/bot sends getMe that way).
func readParams(r *http.Request) (map[string]string, map[string]upload, error) {
	params := map[string]string{}
	files := map[string]upload{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBody {
		return params, files, errBodyTooLarge
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return params, files, nil
	}
	mediaType, mp, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mediaType {
	case "multipart/form-data":
		err = readMultipart(body, mp["boundary"], params, files)
	case "application/x-www-form-urlencoded":
		err = readURLEncoded(body, params)
	case "application/json":
		err = readJSON(body, params)
	}
	return params, files, err
}

// readMultipart keeps file parts (those with a file name) apart from the
// other fields: a field name refers to them as attach://<field name>.
func readMultipart(body []byte, boundary string, params map[string]string, files map[string]upload) error {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("multipart body: %w", err)
		}
		value, err := io.ReadAll(part)
		if err != nil {
			return fmt.Errorf("multipart body: %w", err)
		}
		if name := part.FileName(); name != "" {
			files[part.FormName()] = upload{name: name, data: value}
			continue
		}
		params[part.FormName()] = string(value)
	}
}

func readURLEncoded(body []byte, params map[string]string) error {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return fmt.Errorf("urlencoded body: %w", err)
	}
	for k, v := range values {
		params[k] = v[0]
	}
	return nil
}

// readJSON flattens a JSON object the way multipart forms carry it: strings
// unquoted, everything else as JSON text.
func readJSON(body []byte, params map[string]string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("JSON body: %w", err)
	}
	for k, raw := range fields {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			params[k] = s
			continue
		}
		params[k] = string(raw)
	}
	return nil
}

// intParam parses an integer parameter; a missing one gives def.
func intParam(params map[string]string, name string, def int64) (int64, bool) {
	v, ok := params[name]
	if !ok || v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// boolParam reads "true"/"false" (and 1/0) parameters.
func boolParam(params map[string]string, name string) bool {
	b, _ := strconv.ParseBool(params[name])
	return b
}

// stringList parses a JSON array of strings such as allowed_updates.
func stringList(v string) ([]string, error) {
	var list []string
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, err
	}
	if list == nil {
		list = []string{}
	}
	return list, nil
}
