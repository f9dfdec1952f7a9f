package model_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// key is distinctive so that a test can prove it never reaches an error's text.
const key = "sk-ant-TESTKEY-d1st1nct1ve-0042"

// reply is one canned HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// fixture reads testdata/<name>: a .json file is a body served with status; a .txt
// file is a recorded status line, headers and body, and status is ignored.
func fixture(t *testing.T, name string, status int) reply {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(name, ".txt") {
		return reply{status: status, header: http.Header{"Content-Type": {"application/json"}}, body: data}
	}
	r := bufio.NewReader(bytes.NewReader(data))
	line, _ := r.ReadString('\n')
	fields := strings.Fields(line)
	if len(fields) < 2 {
		t.Fatalf("%s: bad status line %q", name, line)
	}
	code, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("%s: bad status line %q", name, line)
	}
	rep := reply{status: code, header: http.Header{}}
	for {
		l, err := r.ReadString('\n')
		l = strings.TrimRight(l, "\r\n")
		if l == "" || err != nil {
			break
		}
		k, v, _ := strings.Cut(l, ":")
		rep.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	rep.body, _ = io.ReadAll(r)
	rep.header.Del("Content-Length")
	if rep.header.Get("Content-Type") == "" {
		rep.header.Set("Content-Type", "application/json")
	}
	return rep
}

// with returns the reply with its body taken from another fixture, for recorded
// headers whose capture kept no body.
func (r reply) with(body reply) reply {
	r.body = body.body
	return r
}

// server serves replies in order, repeating the last, and keeps every request.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []reply
	requests []recorded
}

type recorded struct {
	header http.Header
	body   []byte
}

func serve(t *testing.T, replies ...reply) *server {
	t.Helper()
	s := &server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, recorded{header: r.Header.Clone(), body: body})
	rep := s.replies[min(n, len(s.replies)-1)]
	s.mu.Unlock()
	for k, vs := range rep.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func (s *server) got() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.requests...)
}
