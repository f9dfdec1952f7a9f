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

	"github.com/countersign/countersign/internal/httpserve"
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
	// MaxConnections caps the requests handled at once, and is sent to setWebhook
	// as max_connections so that Telegram keeps under it: 1 to 100, default 40
	// (Telegram's own default).
	MaxConnections int
	// Timeouts bound each connection; zero fields take DefaultWebhookTimeouts.
	Timeouts WebhookTimeouts
	// Public are handlers served at these exact paths (such as /healthz and
	// /metrics) without the secret; every other path is the webhook.
	Public map[string]http.Handler
}

// WebhookTimeouts bound what one connection may hold, so that a client that sends
// slowly, or not at all, keeps no socket and no place for long.
type WebhookTimeouts struct {
	Header time.Duration // to read the request line and headers
	Read   time.Duration // to read the whole request, body included
	Write  time.Duration // from the end of the headers to the end of the answer
	Idle   time.Duration // a kept-alive connection waiting for its next request
	// Busy is how long a request beyond MaxConnections waits for a place before it
	// is answered 503, which Telegram delivers again later.
	Busy time.Duration
}

// DefaultWebhookTimeouts suit Telegram: its updates are small and its servers
// answer quickly; storing an update takes milliseconds unless the disk stalls.
// They are the limits every listener of the bot has (httpserve.Default), and
// Busy.
var DefaultWebhookTimeouts = WebhookTimeouts{Header: httpserve.Default.Header, Read: httpserve.Default.Read,
	Write: httpserve.Default.Write, Idle: httpserve.Default.Idle, Busy: time.Second}

// maxUpdateBytes caps a webhook request's body: an update is a few kilobytes.
const maxUpdateBytes = 1 << 20

// withDefaults fills the zero fields of a webhook's settings.
func (w Webhook) withDefaults() *Webhook {
	if w.MaxConnections == 0 {
		w.MaxConnections = 40
	}
	or := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	d := DefaultWebhookTimeouts
	or(&w.Timeouts.Header, d.Header)
	or(&w.Timeouts.Read, d.Read)
	or(&w.Timeouts.Write, d.Write)
	or(&w.Timeouts.Idle, d.Idle)
	or(&w.Timeouts.Busy, d.Busy)
	return &w
}

// serveWebhook registers the webhook and serves it until ctx ends.
func (t *Bot) serveWebhook(ctx context.Context) error {
	w := t.opts.Webhook
	if w.MaxConnections < 1 || w.MaxConnections > 100 {
		return fmt.Errorf("telegram: webhook max connections must be 1 to 100, got %d", w.MaxConnections)
	}
	params := &bot.SetWebhookParams{URL: w.URL, SecretToken: w.Secret, AllowedUpdates: []string{"message", "callback_query"},
		MaxConnections: w.MaxConnections}
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
	srv := webhookServer(w, t.WebhookHandler(ctx), tlsConfig, t.log)
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

// webhookServer is the webhook's server: w's timeouts, the header cap every
// listener of the bot has.
func webhookServer(w *Webhook, h http.Handler, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	limits := httpserve.Limits{Header: w.Timeouts.Header, Read: w.Timeouts.Read, Write: w.Timeouts.Write, Idle: w.Timeouts.Idle}
	srv := limits.Server(h, log)
	srv.TLSConfig = tlsConfig
	return srv
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

// WebhookHandler serves Webhook.Public at their paths; at any other path it
// checks the secret header, stores the update in the inbox and only
// then answers 200, so that Telegram delivers again whatever was not stored. At
// most Webhook.MaxConnections requests with the secret are handled at once; one
// more waits up to Timeouts.Busy for a place, then is answered 503. A body over
// 1 MiB is answered 413.
func (t *Bot) WebhookHandler(ctx context.Context) http.Handler {
	w := t.opts.Webhook
	store := limitRequests(w.MaxConnections, w.Timeouts.Busy, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		t.storeUpdate(ctx, rw, r)
	}))
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if h, ok := w.Public[r.URL.Path]; ok {
			h.ServeHTTP(rw, r)
			return
		}
		// The secret is checked first, so that strangers take no place from Telegram.
		got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
		if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(got), []byte(w.Secret)) != 1 {
			http.Error(rw, "forbidden", http.StatusUnauthorized)
			return
		}
		store.ServeHTTP(rw, r)
	})
}

func (t *Bot) storeUpdate(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdateBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		http.Error(w, "too large for an update", http.StatusRequestEntityTooLarge)
		return
	}
	var head struct {
		UpdateID int64 `json:"update_id"`
	}
	if err != nil || json.Unmarshal(body, &head) != nil || head.UpdateID == 0 {
		http.Error(w, "not an update", http.StatusBadRequest)
		return
	}
	if err := t.accept(ctx, []journal.InboxItem{{UpdateID: head.UpdateID, Body: body}}, arrived); err != nil {
		t.log.Error("update not stored; Telegram will deliver it again", "update", head.UpdateID, "err", err)
		http.Error(w, "not stored", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// limitRequests lets at most n requests into next at once. One more waits up to
// wait for a place, then is answered 503 with Retry-After.
func limitRequests(n int, wait time.Duration, next http.Handler) http.Handler {
	places := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case places <- struct{}{}:
		case <-timer.C:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		defer func() { <-places }()
		next.ServeHTTP(w, r)
	})
}
