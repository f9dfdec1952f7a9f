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
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestWebhookChecksTheSecretAndHandlesUpdates(t *testing.T) {
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
