package telegram_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestWebhookChecksTheSecretAndHandlesUpdates(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret-header_value"
	r := newRig(t, withWebhook(&telegram.Webhook{URL: "https://bot.example.org/hook", Secret: secret, Listener: ln}))
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	if got := r.srv.Webhook(); got.SecretToken != secret {
		t.Errorf("registered secret = %q, want %q", got.SecretToken, secret)
	}
	post := func(secretHeader, body string) int {
		return postUpdate(t, http.DefaultClient, "http://"+ln.Addr().String()+"/", secretHeader, body)
	}
	update := opsUpdate(5001)
	for _, tt := range []struct {
		name, secret, body string
		want               int
	}{
		{"no secret", "", update, http.StatusUnauthorized},
		{"wrong secret", "guess", update, http.StatusUnauthorized},
		{"not an update", secret, `{"hello":1}`, http.StatusBadRequest},
		{"update", secret, update, http.StatusOK},
		{"same update again", secret, update, http.StatusOK},
	} {
		if got := post(tt.secret, tt.body); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	r.replyContaining(alice, "No operations yet")
	if n := len(r.srv.Messages(alice)); n != 1 {
		t.Errorf("replies = %d, want 1 (the repeated update is handled once)", n)
	}
}

// opsUpdate is an update carrying alice's /ops, as Telegram posts it to a webhook.
func opsUpdate(id int) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":1,"date":1,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":"/ops"}}`, id, alice, alice)
}

// postUpdate posts body to a webhook with the secret header (none when empty) and
// returns the status.
func postUpdate(t *testing.T, c *http.Client, url, secretHeader, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if secretHeader != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secretHeader)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWebhookServesTLSAndUploadsASelfSignedCertificate(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, certFile, keyFile := selfSigned(t)
	const secret = "tls-secret"
	r := newRig(t, withWebhook(&telegram.Webhook{URL: "https://203.0.113.7:8443/hook", Secret: secret, Listener: ln,
		CertFile: certFile, KeyFile: keyFile}))
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	if got := r.srv.Webhook().Certificate; !bytes.Equal(got, certPEM) {
		t.Errorf("uploaded certificate:\n%s\nwant the self-signed one:\n%s", got, certPEM)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if got := postUpdate(t, client, "https://"+ln.Addr().String()+"/", secret, opsUpdate(6001)); got != http.StatusOK {
		t.Fatalf("HTTPS post: status %d, want 200", got)
	}
	r.replyContaining(alice, "No operations yet")

	// Plain HTTP gets no update in: the server speaks TLS only.
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "application/json", strings.NewReader(opsUpdate(6002)))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("a plain HTTP post was accepted")
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key, and
// returns the certificate's PEM and both files.
func selfSigned(t *testing.T) (certPEM []byte, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM, certFile, keyFile
}

// shortTimeouts let a test watch connections being closed within its deadline.
var shortTimeouts = telegram.WebhookTimeouts{Header: 200 * time.Millisecond, Read: 500 * time.Millisecond,
	Write: 2 * time.Second, Idle: 300 * time.Millisecond, Busy: 100 * time.Millisecond}

// webhookRig serves a webhook with short timeouts and a cap of max requests at once.
func webhookRig(t *testing.T, max int) (*rig, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, withWebhook(&telegram.Webhook{URL: "https://bot.example.org/hook", Secret: hookSecret, Listener: ln,
		Timeouts: shortTimeouts, MaxConnections: max}))
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	return r, ln.Addr().String()
}

const hookSecret = "hook-secret"

// dial opens a raw connection to the webhook and writes what is given.
func dial(t *testing.T, addr, write string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, write); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reads c until the server closes it, and returns what it sent, or
// fails the test if the connection is still open after d.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server still holds the connection after %v (read so far %q)", d, got)
	}
	return string(got)
}

func TestWebhookTimesOutSlowClients(t *testing.T) {
	t.Parallel()
	r, addr := webhookRig(t, 40)
	if got := r.srv.Webhook().MaxConnections; got != 40 {
		t.Errorf("setWebhook max_connections = %d, want 40", got)
	}
	// Half a request line and headers, then nothing: closed at the header timeout.
	half := dial(t, addr, "POST / HTTP/1.1\r\nHost: bot.example.org\r\nContent-Type: appl")
	// Whole headers, with the secret, and a body that never comes: closed at the
	// read timeout.
	body := dial(t, addr, "POST / HTTP/1.1\r\nHost: bot.example.org\r\nX-Telegram-Bot-Api-Secret-Token: "+hookSecret+
		"\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"update_id\":")
	// A finished request on a kept-alive connection: closed at the idle timeout.
	update := opsUpdate(7001)
	idle := dial(t, addr, fmt.Sprintf("POST / HTTP/1.1\r\nHost: bot.example.org\r\nX-Telegram-Bot-Api-Secret-Token: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		hookSecret, len(update), update))
	for name, c := range map[string]net.Conn{"half a header": half, "a body that never comes": body} {
		if got := closedWithin(t, c, 5*time.Second); strings.Contains(got, " 200 ") {
			t.Errorf("%s: answered %q", name, got)
		}
	}
	if got := closedWithin(t, idle, 5*time.Second); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Errorf("the whole update: answered %q, want 200 and then the connection closed when idle", got)
	}
	r.replyContaining(alice, "No operations yet")
}

func TestWebhookRefusesAnOversizedBody(t *testing.T) {
	t.Parallel()
	_, addr := webhookRig(t, 40)
	big := `{"update_id":7002,"message":{"text":"` + strings.Repeat("a", 1<<20) + `"}}`
	if got := postUpdate(t, http.DefaultClient, "http://"+addr+"/", hookSecret, big); got != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: status %d, want 413", got)
	}
}

func TestWebhookCapsRequestsAtOnce(t *testing.T) {
	t.Parallel()
	const max = 2
	r, addr := webhookRig(t, max)
	if got := r.srv.Webhook().MaxConnections; got != max {
		t.Errorf("setWebhook max_connections = %d, want %d: Telegram should keep under the cap", got, max)
	}
	// Strangers holding more connections than the cap, half a header each, take no
	// place from Telegram's requests.
	var strangers []net.Conn
	for range max + 3 {
		strangers = append(strangers, dial(t, addr, "POST / HTTP/1.1\r\nHost: x\r\n"))
	}
	if got := postUpdate(t, http.DefaultClient, "http://"+addr+"/", hookSecret, opsUpdate(7101)); got != http.StatusOK {
		t.Errorf("an update while strangers hold connections: status %d, want 200", got)
	}
	for _, c := range strangers {
		closedWithin(t, c, 5*time.Second)
	}

	// Requests beyond the cap that know the secret and send slowly: the first max
	// hold their places until the read timeout; the rest are turned away with 503.
	slow := make([]net.Conn, max+2)
	for i := range slow {
		slow[i] = dial(t, addr, "POST / HTTP/1.1\r\nHost: bot.example.org\r\nX-Telegram-Bot-Api-Secret-Token: "+hookSecret+
			"\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{")
	}
	busy := 0
	for _, c := range slow {
		if strings.HasPrefix(closedWithin(t, c, 5*time.Second), "HTTP/1.1 503 ") {
			busy++
		}
	}
	if busy != 2 {
		t.Errorf("%d of %d slow requests turned away as busy, want 2 (the cap is %d)", busy, len(slow), max)
	}
	if got := postUpdate(t, http.DefaultClient, "http://"+addr+"/", hookSecret, opsUpdate(7102)); got != http.StatusOK {
		t.Errorf("an update once the slow ones are gone: status %d, want 200", got)
	}
}

// Requests without the right secret (none, a guess, the secret cut short or in
// another case, or a GET) are refused before their body is read, however large,
// and nothing they carry is stored or handled.
func TestWebhookWithoutTheRightSecretReadsAndStoresNothing(t *testing.T) {
	t.Parallel()
	r, addr := webhookRig(t, 40)
	url := "http://" + addr + "/"
	sendUpdate := func(id int) string {
		return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":"/send 222 forged %d"}}`,
			id, id, alice, alice, id)
	}
	huge := strings.TrimSuffix(sendUpdate(8000), "}}") + `,"caption":"` + strings.Repeat("a", 2<<20) + `"}}`
	for i, secret := range []string{"", "guess", hookSecret[:len(hookSecret)-1], strings.ToUpper(hookSecret)} {
		if got := postUpdate(t, http.DefaultClient, url, secret, sendUpdate(8001+i)); got != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d, want 401", secret, got)
		}
	}
	if got := postUpdate(t, http.DefaultClient, url, "guess", huge); got != http.StatusUnauthorized {
		t.Errorf("a wrong secret with a body over 1 MiB: status %d, want 401 before the body is read", got)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", hookSecret)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET with the secret: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	if got := postUpdate(t, http.DefaultClient, url, hookSecret, opsUpdate(8100)); got != http.StatusOK {
		t.Fatalf("the real update: status %d, want 200", got)
	}
	r.replyContaining(alice, "No operations yet")
	r.shutdown() // waits for the handling of everything stored
	if got := r.srv.Messages(alice); len(got) != 1 {
		t.Errorf("alice got %d messages, want only the reply to /ops: %+v", len(got), got)
	}
}

// A token whose colon comes JSON-escaped (Telegram does not write it so, but a
// body may) is refused like one written plainly: the command is answered with a
// refusal, and the token is in no file the bot writes and in nothing it sends.
func TestATokenWrittenWithJSONEscapesIsRefusedAndNeverStored(t *testing.T) {
	t.Parallel()
	r, addr := webhookRig(t, 40)
	escaped := strings.Replace(token, ":", `\u003a`, 1)
	body := fmt.Sprintf(`{"update_id":9001,"message":{"message_id":1,"date":1,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":"/send 222 the token %s"}}`,
		alice, alice, escaped)
	if got := postUpdate(t, http.DefaultClient, "http://"+addr+"/", hookSecret, body); got != http.StatusOK {
		t.Fatalf("status %d, want 200", got)
	}
	r.replyContaining(alice, "looks like a secret")
	r.shutdown()
	noTokenLeft(t, r)
}

// noTokenLeft fails the test if the bot's token, or its secret half, is in any file
// under the rig's folder, in the logs, or in any request the bot made.
func noTokenLeft(t *testing.T, r *rig) {
	t.Helper()
	half := strings.Split(token, ":")[1]
	filepath.Walk(r.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(half)) {
			t.Errorf("%s holds the token", path)
		}
		return nil
	})
	if strings.Contains(r.logs.String(), half) {
		t.Error("the token is in the logs")
	}
	for _, c := range r.srv.Calls() {
		if strings.Contains(fmt.Sprint(c.Params), half) {
			t.Errorf("%s echoed the token: %v", c.Method, c.Params)
		}
	}
}

// An update the webhook cannot store (the journal's disk is full) is not answered
// 200, which would tell Telegram it arrived: Telegram delivers it again, and once
// there is room the same update is taken, once.
func TestAWebhookUpdateThatCannotBeStoredIsAnsweredSoThatTelegramSendsItAgain(t *testing.T) {
	t.Parallel()
	listen := func(r *rig) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r.webhook = &telegram.Webhook{URL: "https://bot.example.org/hook", Secret: hookSecret, Listener: ln, Timeouts: shortTimeouts}
		return "http://" + ln.Addr().String() + "/"
	}
	r := newRig(t)
	r.shutdown()
	url := listen(r)
	// The journal is frozen at its size: storing an update needs pages it cannot have.
	r.jopts = []journal.Option{journal.WithSizeLimit(1)}
	r.start()
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	text := strings.Repeat("Квартальные цифры готовы. ", 120) // over a page in UTF-8 bytes
	update := fmt.Sprintf(`{"update_id":9101,"message":{"message_id":5,"date":1,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":%q}}`,
		alice, alice, "/send 222 "+text)
	if got := postUpdate(t, http.DefaultClient, url, hookSecret, update); got != http.StatusServiceUnavailable {
		t.Errorf("an update that could not be stored: status %d, want 503 (Telegram then delivers it again)", got)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "update not stored") {
		t.Errorf("the log does not say the update was not stored:\n%s", logs)
	}

	// Space comes back, and Telegram delivers the update again.
	r.jopts = nil
	r.shutdown()
	url = listen(r)
	r.start()
	if got := postUpdate(t, http.DefaultClient, url, hookSecret, update); got != http.StatusOK {
		t.Fatalf("the update again, with room: status %d, want 200", got)
	}
	card := r.card(alice)
	if !strings.Contains(card.Text, "Квартальные цифры готовы.") {
		t.Fatalf("card = %q, want the text of the update that waited", card.Text)
	}
	r.shutdown()
	if n := len(cardsIn(r.srv, alice)); n != 1 {
		t.Errorf("cards = %d, want 1", n)
	}
}

// Headers over the cap are refused (431) before they reach the secret check,
// however much a client sends.
func TestWebhookRefusesOversizedHeaders(t *testing.T) {
	t.Parallel()
	_, addr := webhookRig(t, 40)
	c := dial(t, addr, "POST / HTTP/1.1\r\nHost: bot.example.org\r\nX-Pad: "+strings.Repeat("a", 128<<10)+"\r\n\r\n")
	if got := closedWithin(t, c, 5*time.Second); !strings.HasPrefix(got, "HTTP/1.1 431 ") {
		t.Errorf("headers of 128 KiB: answered %.40q, want 431", got)
	}
}
