package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
)

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
