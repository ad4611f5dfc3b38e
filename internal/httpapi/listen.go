package httpapi

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

// ServerOptions configure the http.Server that serves the API.
type ServerOptions struct {
	// ReadHeaderTimeout disconnects a client that does not send its
	// request headers in time, such as a slowloris attack (default 10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that waits this long for
	// its next request (default 2m).
	IdleTimeout time.Duration
	// CertFile and KeyFile, when set, are the PEM certificate chain and key
	// of HTTPS. They are read once, by NewHTTPServer.
	CertFile, KeyFile string
	// Logger receives the server's own errors (failed TLS handshakes,
	// accept errors); nil discards them.
	Logger *slog.Logger
}

// Defaults of ServerOptions.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// NewHTTPServer returns the http.Server for the API handler h, with its
// timeouts set. With CertFile and KeyFile it loads the certificate and sets
// TLSConfig: serve it with ServeTLS(listener, "", ""). There is no
// WriteTimeout, since event streams stay open; each stream bounds its own
// writes (Options.WriteTimeout).
func NewHTTPServer(h http.Handler, opts ServerOptions) (*http.Server, error) {
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelInfo),
	}
	switch {
	case opts.CertFile == "" && opts.KeyFile == "":
	case opts.CertFile == "" || opts.KeyFile == "":
		return nil, fmt.Errorf("HTTPS needs both a certificate file and a key file (got certificate %q, key %q)", opts.CertFile, opts.KeyFile)
	default:
		cert, err := tls.LoadX509KeyPair(opts.CertFile, opts.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load the HTTPS certificate %s and key %s: %w", opts.CertFile, opts.KeyFile, err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	return srv, nil
}

// LoopbackOnly reports whether a listen address (host:port) is reachable
// from this machine alone: localhost or a loopback IP (127.0.0.0/8, ::1).
// An empty or unspecified host (all interfaces) and any other name or
// address are not.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
