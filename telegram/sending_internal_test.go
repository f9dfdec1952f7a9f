package telegram

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The default limits are the README's: 28 a second overall and 30 within any
// second, one a second in a chat and one per 3.2 s in a group or channel (each
// counted from the answer to the send before).
func TestDefaultLimitsKeepTheirMargin(t *testing.T) {
	t.Parallel()
	want := Limits{Overall: 28, InSecond: 30, PerChat: 1, PerGroup: rate.Every(3200 * time.Millisecond), ChatBurst: 1}
	if DefaultLimits != want {
		t.Errorf("DefaultLimits = %+v, want %+v", DefaultLimits, want)
	}
}

// Wait spaces two sends to one chat by the chat's limit, from the answer to the
// first: a private chat's, or the slower one of a group (-100…) or a channel (@name).
func TestWaitSpacesSendsPerChatAndSlowerPerGroup(t *testing.T) {
	t.Parallel()
	limits := Limits{Overall: 1000, PerChat: rate.Every(100 * time.Millisecond), PerGroup: rate.Every(400 * time.Millisecond), ChatBurst: 1}
	for _, tt := range []struct {
		target string
		min    time.Duration
	}{
		{"222", 90 * time.Millisecond},
		{"-1001234567890", 390 * time.Millisecond},
		{"@news_desk", 390 * time.Millisecond},
	} {
		l := NewLimiter(limits)
		ctx := context.Background()
		done, err := l.Wait(ctx, tt.target)
		if err != nil {
			t.Fatal(err)
		}
		done() // answered
		start := time.Now()
		if _, err := l.Wait(ctx, tt.target); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < tt.min {
			t.Errorf("%s: the second send waited %s, want at least %s", tt.target, got, tt.min)
		}
	}
}

// traceWrite tells a request that was written whole from one whose write failed:
// only the first may have reached Telegram, so only it can have an unknown outcome.
func TestTraceWriteTellsAWrittenRequestFromAFailedWrite(t *testing.T) {
	t.Parallel()
	written := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer written.Close()
	// A server that reads the start of the request and resets the connection: the
	// rest of a large body cannot be written.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 512))
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	for _, tt := range []struct {
		name string
		url  string
		body int
		want bool
	}{
		{"answered 502 after the whole request", written.URL, 1 << 10, true},
		{"reset while the body was written", "http://" + ln.Addr().String(), 64 << 20, false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ctx, wrote := traceWrite(ctx)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tt.url, bytes.NewReader(make([]byte, tt.body)))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if wrote.Load() != tt.want {
			t.Errorf("%s: written = %v (err %v), want %v", tt.name, wrote.Load(), err, tt.want)
		}
	}
}
