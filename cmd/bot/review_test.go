package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// The binary with -review-listen and -review-url: a card's 🔎 Whole payload
// opens the page at the address given, the page shows the payload to the
// approver Telegram's init data names, and its Approve sends; /review gives
// the approver a link under the same address, which shows it too. Neither the init data nor the
// link reaches the log.
func TestTheBinaryServesTheReviewPage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, logs, wait := childData(t, srv)
	addr := "127.0.0.1:" + freePort(t)
	base := "http://" + addr
	startBotWith(t, srv, data, nil, "-review-listen", addr, "-review-url", base)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	srv.PushMessage(100, 100, "/send 222 the whole of it")
	var page string
	wait("a card with its page", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if u := regexp.MustCompile(`"web_app":\{"url":"([^"]+)"`).FindStringSubmatch(string(m.ReplyMarkup)); u != nil {
				page = u[1]
			}
		}
		return page != ""
	})
	if !strings.HasPrefix(page, base+review.Path+"/ap-") {
		t.Fatalf("the card's page is %s, want one under %s", page, base)
	}
	res, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `src="`+review.DefaultTelegramScript+`"`) ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self' https://telegram.org") {
		t.Fatalf("GET %s: %d %s", page, res.StatusCode, res.Header)
	}
	apID := page[strings.LastIndex(page, "/")+1:]
	initData := review.SignInitData(childToken, review.InitUser{ID: 100, FirstName: "Ann"}, time.Now(), nil)
	post := func(api string, body map[string]any) map[string]string {
		t.Helper()
		b, _ := json.Marshal(body)
		res, err := http.Post(base+review.Path+"/api/"+api, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out := map[string]any{}
		json.NewDecoder(res.Body).Decode(&out)
		s := map[string]string{}
		for k, v := range out {
			s[k], _ = v.(string)
		}
		return s
	}
	shown := post("show", map[string]any{"approval": apID, "init_data": initData})
	if !strings.Contains(shown["html"], "the whole of it") || len(shown["sha256"]) != 64 {
		t.Fatalf("show = %v", shown)
	}
	if refused := post("show", map[string]any{"approval": apID, "init_data": strings.Replace(initData, "Ann", "Bob", 1)}); refused["error"] == "" {
		t.Errorf("show with init data changed = %v, want a refusal", refused)
	}
	opID := regexp.MustCompile(`op-[a-z0-9]+`).FindString(shown["html"])
	srv.PushMessage(100, 100, "/review "+opID)
	var link string
	wait("the /review link", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if i := strings.Index(m.Text, base+review.Path+"/"+apID+"#link="); i >= 0 {
				link = m.Text[i:]
			}
		}
		return link != ""
	})
	byLink := post("show", map[string]any{"approval": apID, "link": link[strings.Index(link, "#link=")+6:]})
	if byLink["sha256"] != shown["sha256"] {
		t.Fatalf("show by link = %v", byLink)
	}
	decided := post("decide", map[string]any{"approval": apID, "init_data": initData, "sha256": shown["sha256"], "decision": "approve"})
	if !strings.Contains(decided["said"], "✅ Approved by Ann (100)") {
		t.Fatalf("decide = %v", decided)
	}
	wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	_, half, _ := strings.Cut(childToken, ":")
	for _, secret := range []string{half, "hash=", "#link=", link[strings.Index(link, "#link=")+6:]} {
		if strings.Contains(logs(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	if !strings.Contains(logs(), `msg="review page serving"`) || !strings.Contains(logs(), `msg="review page refused"`) {
		t.Errorf("the log does not say where the page is served, or its refusal:\n%s", logs())
	}
}

// The review page's flags go together, and Telegram opens only https.
func TestTheReviewPagesFlagsAreChecked(t *testing.T) {
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"-review-listen", "127.0.0.1:0"}, "-review-listen and -review-url go together"},
		{[]string{"-review-url", "https://bot.example.com"}, "-review-listen and -review-url go together"},
		{[]string{"-review-listen", "127.0.0.1:0", "-review-url", "http://bot.example.com"}, "over https only"},
		{[]string{"-review-listen", "127.0.0.1:0", "-review-url", "https://bot.example.com/?x=1"}, "with no query"},
	} {
		r := runMain(t, "", env, append([]string{"run", "-data", t.TempDir()}, c.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.says) {
			t.Errorf("run %v: %d %q, want a usage error saying %q", c.args, r.code, r.stderr, c.says)
		}
	}
}
