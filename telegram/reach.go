package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/secret"
)

// Me asks the Bot API at apiURL (DefaultAPIURL when "") who the bot of token
// is, and nothing else: the check of a token before a bot is set up. Its
// errors are New's: a *TokenError before any request, ErrTokenRejected, an
// error wrapping ErrUnreachable; none carries the token.
func Me(ctx context.Context, token, apiURL string) (*models.User, error) {
	given := token
	token, err := ParseToken(token)
	if err != nil {
		return nil, err
	}
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	redact := secret.NewKnown(given).Redact
	api, err := bot.New(token, bot.WithServerURL(strings.TrimSuffix(apiURL, "/")), bot.WithSkipGetMe(),
		bot.WithHTTPClient(0, &http.Client{Timeout: 15 * time.Second}))
	if err != nil {
		return nil, fmt.Errorf("telegram: %s", redact(err.Error()))
	}
	return getMe(ctx, api, apiURL, redact)
}

// getMe is the bot's own user, or an error that says what to change: the token
// (ErrTokenRejected), the network or the address (ErrUnreachable).
func getMe(ctx context.Context, api *bot.Bot, apiURL string, redact func(string) string) (*models.User, error) {
	me, err := api.GetMe(ctx)
	switch {
	case err == nil:
		return me, nil
	case errors.Is(err, bot.ErrorUnauthorized):
		return nil, ErrTokenRejected
	}
	if err := unreachable(err, apiURL, redact); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("telegram: getMe: %s", redact(err.Error()))
}

// ErrUnreachable is wrapped by New's error when getMe got no answer from the Bot
// API: a name that does not resolve, a connection refused, no answer in time.
// The token has nothing to do with it; the network, or TELEGRAM_API_URL, does.
var ErrUnreachable = errors.New("the Bot API cannot be reached")

// unreachable returns err as an ErrUnreachable that names the server and the
// network's reason in a few words, or nil when err is not a failure to reach
// the server (an answer that refused the call, for one). redact takes the token
// out of what the network's reason quotes.
func unreachable(err error, apiURL string, redact func(string) string) error {
	var ue *url.Error
	if !errors.As(err, &ue) || errors.Is(err, context.Canceled) { // a stop is no network's fault
		return nil
	}
	server := apiURL
	if u, perr := url.Parse(apiURL); perr == nil && u.Host != "" {
		server = u.Scheme + "://" + u.Host // never a path or a user's password
	}
	return fmt.Errorf("%w at %s (%s): check the network, or TELEGRAM_API_URL for a self-hosted Bot API server",
		ErrUnreachable, server, redact(netReason(ue)))
}

// netReason is why a request found no server, in the network's own short words.
func netReason(ue *url.Error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(ue, &dns) && dns.IsNotFound:
		return "the name " + dns.Name + " does not resolve"
	case errors.As(ue, &dns):
		return "looking up " + dns.Name + ": " + dns.Err
	case ue.Timeout():
		return "no answer in time"
	case errors.As(ue, &op) && op.Err != nil:
		return op.Err.Error()
	}
	return ue.Err.Error()
}
