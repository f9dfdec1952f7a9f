package telegram

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/journal"
)

// Webhook receives updates over HTTP instead of long polling. Telegram calls URL
// (HTTPS, ports 443, 80, 88 or 8443); Listen is where this process serves: plain
// HTTP behind a TLS-terminating proxy, or HTTPS with CertFile and KeyFile. Secret is sent by Telegram in every request's
// X-Telegram-Bot-Api-Secret-Token header; a request without it is refused.
type Webhook struct {
	Listen string
	URL    string
	Secret string
	// CertFile and KeyFile, when set, make the webhook serve HTTPS itself instead
	// of plain HTTP behind a TLS-terminating proxy. A self-signed certificate is
	// uploaded with setWebhook, as Telegram asks, so that it is trusted.
	CertFile, KeyFile string
	// Listener, when set, is served instead of listening on Listen.
	Listener net.Listener
}

// serveWebhook registers the webhook and serves it until ctx ends.
func (t *Bot) serveWebhook(ctx context.Context) error {
	w := t.opts.Webhook
	params := &bot.SetWebhookParams{URL: w.URL, SecretToken: w.Secret, AllowedUpdates: []string{"message", "callback_query"}}
	var tlsConfig *tls.Config
	if w.CertFile != "" || w.KeyFile != "" {
		cert, upload, err := loadCertificate(w.CertFile, w.KeyFile)
		if err != nil {
			return err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if upload != nil {
			params.Certificate = &models.InputFileUpload{Filename: "certificate.pem", Data: bytes.NewReader(upload)}
		}
	}
	if _, err := t.api.SetWebhook(ctx, params); err != nil {
		return errors.New("telegram: setWebhook: " + t.redact(err.Error()))
	}
	ln := w.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", w.Listen); err != nil {
			return err
		}
	}
	srv := &http.Server{Handler: t.WebhookHandler(ctx), ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig,
		ErrorLog: slog.NewLogLogger(t.log.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	t.log.Info("webhook serving", "listen", ln.Addr().String(), "tls", tlsConfig != nil)
	serve := srv.Serve
	if tlsConfig != nil {
		serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	if err := serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadCertificate reads the webhook's key pair. It returns the certificate's PEM to
// upload when the certificate signs itself (Telegram cannot otherwise trust it),
// and nil when a known authority issued it.
func loadCertificate(certFile, keyFile string) (tls.Certificate, []byte, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, nil, errors.New("telegram: webhook TLS needs both a certificate and a key file")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("telegram: webhook certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("telegram: webhook certificate: %w", err)
	}
	if leaf.CheckSignatureFrom(leaf) != nil {
		return cert, nil, nil
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}), nil
}

// WebhookHandler checks the secret header, stores the update in the inbox and only
// then answers 200, so that Telegram delivers again whatever was not stored.
func (t *Bot) WebhookHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(got), []byte(t.opts.Webhook.Secret)) != 1 {
			http.Error(w, "forbidden", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var head struct {
			UpdateID int64 `json:"update_id"`
		}
		if err != nil || json.Unmarshal(body, &head) != nil || head.UpdateID == 0 {
			http.Error(w, "not an update", http.StatusBadRequest)
			return
		}
		if err := t.accept(ctx, []journal.InboxItem{{UpdateID: head.UpdateID, Body: body}}); err != nil {
			t.log.Error("update not stored; Telegram will deliver it again", "update", head.UpdateID, "err", err)
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
