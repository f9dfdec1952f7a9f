// Package httpserve gives the bot's HTTP listeners (the Telegram webhook, the MCP
// listener of countersign run -mcp-listen, the loopback one of the agent CLIs' runs) one
// set of connection limits, so that a client that sends slowly, or not at all,
// or keeps a connection idle, holds no socket for long on any of them.
package httpserve

import (
	"log/slog"
	"net/http"
	"time"
)

// Limits bound what one connection may hold. Zero fields take Default's.
type Limits struct {
	Header time.Duration // to read the request line and headers
	Read   time.Duration // to read the whole request, body included
	Write  time.Duration // from the end of the headers to the end of the answer
	Idle   time.Duration // a kept-alive connection waiting for its next request
	// MaxHeaderBytes caps the request line and headers.
	MaxHeaderBytes int
}

// Default suits requests that are small and answered quickly (a Telegram update,
// an MCP request refused for its token); a handler that serves a longer answer
// to a client it trusts lifts its own deadlines with Hold.
var Default = Limits{Header: 5 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second,
	Idle: 60 * time.Second, MaxHeaderBytes: 64 << 10}

// WithDefaults returns l with its zero fields taken from Default.
func (l Limits) WithDefaults() Limits {
	or := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	or(&l.Header, Default.Header)
	or(&l.Read, Default.Read)
	or(&l.Write, Default.Write)
	or(&l.Idle, Default.Idle)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = Default.MaxHeaderBytes
	}
	return l
}

// Server returns a server of h under l (zero fields from Default), logging the
// connection errors it meets (a header too slow, a TLS handshake refused) to log
// as warnings.
func (l Limits) Server(h http.Handler, log *slog.Logger) *http.Server {
	l = l.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: l.Header, ReadTimeout: l.Read, WriteTimeout: l.Write,
		IdleTimeout: l.Idle, MaxHeaderBytes: l.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// Hold moves the write deadline of the request w answers to d from now, or
// removes it for d == 0: for a request already known to be allowed whose answer
// legitimately takes longer than Limits.Write (a bounded wait, an event stream).
// The read deadline stays: the request itself is still read under Limits.Read.
func Hold(w http.ResponseWriter, d time.Duration) {
	var at time.Time
	if d > 0 {
		at = time.Now().Add(d)
	}
	http.NewResponseController(w).SetWriteDeadline(at)
}
