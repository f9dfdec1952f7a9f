package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The page's requests are answered; a request a page elsewhere could make in
// the person's browser is not.
func TestHandlerAnswersOnlyThePage(t *testing.T) {
	s := newScene(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name, method, path, host, contentType, origin, body string
		status                                              int
		contains                                            string
	}{
		{"the page", "GET", "/", host, "", "", "", 200, `<script src="/page.js">`},
		{"its script", "GET", "/page.js", host, "", "", "", 200, "/api/view"},
		{"its style", "GET", "/page.css", host, "", "", "", 200, ".phone"},
		{"nothing else", "GET", "/secret", host, "", "", "", 404, ""},
		{"as localhost", "GET", "/", "localhost" + host[strings.LastIndex(host, ":"):], "", "", "", 200, ""},
		{"under another host name", "GET", "/", "demo.example:80", "", "", "", 421, ""},
		{"a form's post", "POST", "/api/say", host, "text/plain", "", `{"text":"hi"}`, 415, ""},
		{"from another origin", "POST", "/api/say", host, "application/json", "http://demo.example", `{"text":"hi"}`, 403, ""},
		{"nothing to say", "POST", "/api/say", host, "application/json", "", `{"text":"  "}`, 400, ""},
		{"not JSON", "POST", "/api/say", host, "application/json", "", `hi`, 400, ""},
		{"a tap in another chat", "POST", "/api/tap", host, "application/json", "", `{"chat":999,"message":1,"data":"x"}`, 400, ""},
		{"a tap on nothing", "POST", "/api/tap", host, "application/json", "", `{"chat":111,"message":1}`, 400, ""},
		{"a get that would act", "GET", "/api/say", host, "", "", "", 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.contains) {
				t.Errorf("%s %s: %d %.80q, want %d with %q", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.contains)
			}
		})
	}
	if n := len(s.Server.PendingUpdates()); n != 0 {
		t.Errorf("%d updates from refused requests, want none", n)
	}
}

// What the page posts becomes the person's message, tap, or armed loss.
func TestHandlerActsAsThePerson(t *testing.T) {
	s := newScene(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", srv.URL)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST %s %s: %d, want 204", path, body, resp.StatusCode)
		}
	}
	post("/api/say", `{"text":"/send 222 hi"}`)
	if u := nextUpdate(t, s); u.Message == nil || u.Message.Text != "/send 222 hi" {
		t.Errorf("update %+v, want the person's message", u)
	}
	card := send(t, s, you, "card", keyboard("✅ Approve", "ap1:ap-1:a"))
	post("/api/tap", `{"chat":111,"message":`+itoa(card)+`,"data":"ap1:ap-1:a"}`)
	if u := nextUpdate(t, s); u.CallbackQuery == nil || u.CallbackQuery.Data != "ap1:ap-1:a" || u.CallbackQuery.Message.MessageID != card {
		t.Errorf("update %+v, want the tap on the card", u)
	}
	prompt := send(t, s, you, "reply to this", `{"force_reply":true}`)
	post("/api/say", `{"text":"new text","reply_to":`+itoa(prompt)+`}`)
	if u := nextUpdate(t, s); u.Message == nil || u.Message.ReplyTo == nil || u.Message.ReplyTo.MessageID != prompt {
		t.Errorf("update %+v, want a reply to the prompt", u)
	}
	post("/api/lose", `{}`)
	if !s.Armed() {
		t.Error("POST /api/lose armed nothing")
	}
}

// GET /api/view answers at once with a view the page has not seen; with the
// one it has, it waits for the next change, or answers the same view when
// the request's time is up.
func TestViewWaitsForAChange(t *testing.T) {
	s := newScene(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	first := getView(t, srv.URL+"/api/view?after=")
	if len(first.View.Chats) != 2 || first.View.Chats[0].ID != you || first.View.Chats[1].Title != "Alex (222)" || first.Key == "" {
		t.Fatalf("view %+v, want the person's chat and Alex's, and a key", first)
	}

	const patience = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, "GET", "http://127.0.0.1/api/view?after="+first.Key, nil)
	start := time.Now()
	s.Handler().ServeHTTP(rec, req)
	var same viewReply
	json.Unmarshal(rec.Body.Bytes(), &same)
	if took := time.Since(start); took < patience || rec.Code != 200 || same.Key != first.Key {
		t.Errorf("with nothing changed: %d %s after %v, want the same view after %v", rec.Code, rec.Body, took, patience)
	}

	got := make(chan viewReply, 1)
	go func() { got <- getView(t, srv.URL+"/api/view?after="+first.Key) }()
	send(t, s, target, "hello", "")
	select {
	case r := <-got:
		if r.Key == first.Key || len(r.View.Chats[1].Messages) != 1 || r.View.Chats[1].Messages[0].Text != "hello" {
			t.Errorf("view after a send %+v, want a new key and the message", r)
		}
	case <-time.After(waitLimit):
		t.Fatal("the view did not answer after a change")
	}
}

type viewReply struct {
	Key  string `json:"key"`
	View struct {
		Chats []struct {
			ID       int64  `json:"id"`
			Title    string `json:"title"`
			Messages []struct {
				Text string `json:"text"`
			} `json:"messages"`
		} `json:"chats"`
	} `json:"view"`
}

func getView(t *testing.T, url string) viewReply {
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return viewReply{}
	}
	defer resp.Body.Close()
	var r viewReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Error(err)
	}
	return r
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
