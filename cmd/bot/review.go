package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
)

// checkPasskeys refuses a policy that asks a passkey (step_up: passkey) of a
// bot whose review page cannot host one: none served, or served at an IP
// address, which is no WebAuthn relying party.
func checkPasskeys(p *policy.Policy, reviewURL string) error {
	if !p.Asks(policy.FactorPasskey) {
		return nil
	}
	if reviewURL == "" {
		return errors.New("the policy asks a passkey (step_up: passkey), which approvers give on the review page: serve it with -review-listen and -review-url")
	}
	if _, err := passkey.NewRP(reviewURL); err != nil {
		return fmt.Errorf("the policy asks a passkey (step_up: passkey), and -review-url cannot host one: %w", err)
	}
	return nil
}

// checkReviewURL refuses a -review-url Telegram would not open as a Mini App:
// it must be https, but for a loopback host (a test, a local try).
func checkReviewURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return errors.New("an address such as https://bot.example.com, with no query")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && policy.IsLoopback(u.Hostname()):
		return nil
	}
	return errors.New("Telegram opens a Mini App over https only (http is taken for a loopback host alone)")
}

// listenReview serves the review page of this round's handler on
// -review-listen until ctx ends, and gives /review its links. The returned
// channel is closed once the server has stopped.
func (s *serving) listenReview(ctx context.Context, a *app) (<-chan struct{}, error) {
	keys := review.NewKeys(s.rf.token)
	a.handler.Reviewer = review.Linker{Keys: keys, Base: s.rf.reviewURL}
	rp, err := passkey.NewRP(s.rf.reviewURL)
	if err != nil {
		rp = nil // no passkeys on an IP address; checkPasskeys refused a policy that asks one
	}
	opts := review.Options{Handler: a.handler, Token: s.rf.token, Files: s.files, TelegramScript: review.DefaultTelegramScript,
		Audience: s.tg.Audience, Logger: s.logger, Passkeys: rp}
	if s.rf.reviewMount != nil {
		// The demo: its own Telegram puts the init data in the page's address,
		// and no script of Telegram's is loaded (it would need the internet).
		opts.TelegramScript = ""
		s.rf.reviewMount(review.New(opts))
		done := make(chan struct{})
		go func() { <-ctx.Done(); close(done) }()
		return done, nil
	}
	page := review.New(opts)
	ln, err := net.Listen("tcp", s.rf.reviewListen)
	if err != nil {
		return nil, fmt.Errorf("review page: %w", err)
	}
	srv := httpserve.Default.Server(page, s.logger)
	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	s.logger.Info("review page serving", "listen", ln.Addr().String(), "url", s.rf.reviewURL)
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("review page server stopped", "err", err)
		}
	}()
	return done, nil
}
