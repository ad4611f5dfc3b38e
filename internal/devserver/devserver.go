package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.temporal.io/server/common/searchattribute/sadefs"
	"go.temporal.io/server/temporal"
	"google.golang.org/grpc"
)

const (
	defaultNamespace = "default"
	defaultRetention = 72 * time.Hour
	minRetention     = time.Hour // the server's minimum for local namespaces
	// defaultStartTimeout bounds Start when ctx has no deadline.
	defaultStartTimeout = 60 * time.Second
	// maxKeywordLists is what SQLite visibility offers per namespace.
	maxKeywordLists = 3
)

// Options configures Start.
type Options struct {
	// DataDir is the state directory; the SQLite file is DataDir/temporal.db.
	// The directory is created if missing. Required.
	DataDir string
	// Namespace is created if missing. Default "default".
	Namespace string
	// FrontendPort is the frontend gRPC port on 127.0.0.1. 0 picks a free
	// port (Server.FrontendPort tells which); pass it back on the next Start
	// of the same DataDir to keep it fixed across restarts.
	FrontendPort int
	// UIPort serves the Temporal Web UI on 127.0.0.1:UIPort. 0 = no Web UI.
	UIPort int
	// KeywordListSearchAttributes are registered as KeywordList custom search
	// attributes on the namespace at every start (idempotent). SQLite allows
	// at most 3 per namespace.
	KeywordListSearchAttributes []string
	// Logger receives the server's own logs at WARN and above. nil = discard.
	Logger *slog.Logger
	// Retention is how long closed workflows are kept. Default 72h, minimum
	// 1h. Applied to the namespace at every start.
	Retention time.Duration
}

// Server is a running dev server. Stop it with Stop.
type Server struct {
	namespace    string
	frontendPort int
	uiPort       int
	dataDir      string

	temporal temporal.Server
	logger   *serverLogger
	conn     *grpc.ClientConn // readiness / admin connection to the frontend
	ui       *uiServer
	lock     *dirLock

	stopOnce sync.Once
	stopErr  error
}

// Start starts the server and returns once the frontend serves the
// namespace (DescribeNamespace succeeds), history and matching answer, the
// search attributes are registered and, when asked for, the Web UI serves.
// ctx bounds the whole startup (60 s when it has no deadline); it does not
// bound the server's lifetime.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := normalizeOptions(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultStartTimeout)
		defer cancel()
	}

	dataDir, err := prepareDataDir(opts.DataDir, opts.Logger)
	if err != nil {
		return nil, err
	}
	lock, err := acquireDirLock(filepath.Join(dataDir, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("devserver: data dir %q: %w", dataDir, err)
	}
	s := &Server{namespace: opts.Namespace, dataDir: dataDir, lock: lock}
	ok := false
	defer func() {
		if !ok {
			_ = s.Stop()
		}
	}()

	ns, err := namespaceConfig(opts.Namespace, opts.Retention, opts.KeywordListSearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("devserver: namespace %q: %w", opts.Namespace, err)
	}
	sqlCfg, created, err := prepareDatabase(dataDir, ns)
	if err != nil {
		return nil, err
	}

	ports, err := planPorts(opts.FrontendPort, opts.UIPort)
	if err != nil {
		return nil, err
	}
	s.frontendPort, s.uiPort = ports.frontend.grpc, ports.ui

	logger := newServerLogger(opts.Logger, slog.LevelWarn)
	s.logger = logger
	srv, err := temporal.NewServer(serverOptions(serverConfig(sqlCfg, ports), ports, logger)...)
	if err != nil {
		return nil, fmt.Errorf("devserver: cannot build Temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		// Stop whatever part of the server did start.
		_ = srv.Stop()
		return nil, fmt.Errorf("devserver: cannot start Temporal server (data %q, frontend %s): %w",
			filepath.Join(dataDir, dbFileName), s.FrontendAddress(), err)
	}
	s.temporal = srv

	if s.conn, err = dialFrontend(s.FrontendAddress()); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, s.conn, s.namespace); err != nil {
		return nil, fmt.Errorf("devserver: server on %s did not become ready: %w", s.FrontendAddress(), err)
	}
	if !created {
		if err := ensureRetention(ctx, s.conn, s.namespace, opts.Retention); err != nil {
			return nil, err
		}
	}
	if err := ensureSearchAttributes(ctx, s.conn, s.namespace, opts.KeywordListSearchAttributes); err != nil {
		return nil, err
	}

	if ports.ui != 0 {
		ui, err := startUI(ctx, ports.ui, s.FrontendAddress(), s.namespace)
		if err != nil {
			return nil, err
		}
		s.ui = ui
	}
	ok = true
	return s, nil
}

func normalizeOptions(o Options) (Options, error) {
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	if o.Retention == 0 {
		o.Retention = defaultRetention
	}
	if o.Retention < minRetention {
		return o, fmt.Errorf("devserver: Retention %v is below the minimum of %v", o.Retention, minRetention)
	}
	if o.FrontendPort < 0 || o.FrontendPort > 65535 {
		return o, fmt.Errorf("devserver: invalid FrontendPort %d", o.FrontendPort)
	}
	if o.UIPort < 0 || o.UIPort > 65535 {
		return o, fmt.Errorf("devserver: invalid UIPort %d", o.UIPort)
	}
	if o.UIPort != 0 && o.UIPort == o.FrontendPort {
		return o, fmt.Errorf("devserver: UIPort and FrontendPort are both %d", o.UIPort)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var sas []string
	for _, sa := range o.KeywordListSearchAttributes {
		if !validSearchAttributeName(sa) {
			return o, fmt.Errorf("devserver: invalid search attribute name %q (want letters, digits and '_', not starting with a digit)", sa)
		}
		if sadefs.IsReserved(sa) {
			return o, fmt.Errorf("devserver: search attribute name %q is reserved by Temporal", sa)
		}
		if !slices.Contains(sas, sa) {
			sas = append(sas, sa)
		}
	}
	if len(sas) > maxKeywordLists {
		return o, fmt.Errorf("devserver: %d KeywordList search attributes requested; SQLite visibility allows %d per namespace", len(sas), maxKeywordLists)
	}
	o.KeywordListSearchAttributes = sas
	return o, nil
}

func validSearchAttributeName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// FrontendAddress is the frontend gRPC address, "127.0.0.1:<port>".
func (s *Server) FrontendAddress() string { return hostPort(s.frontendPort) }

// FrontendPort is the frontend gRPC port.
func (s *Server) FrontendPort() int { return s.frontendPort }

// UIAddress is the Web UI base URL, "http://127.0.0.1:<port>", or "" when
// the UI is off.
func (s *Server) UIAddress() string {
	if s.uiPort == 0 {
		return ""
	}
	return "http://" + hostPort(s.uiPort)
}

// Namespace is the namespace the server was started with.
func (s *Server) Namespace() string { return s.namespace }

// Stop stops the Web UI and the server and releases the data directory.
// It is safe to call more than once; later calls return the first result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.logger != nil {
			s.logger.beginStop()
		}
		if s.ui != nil {
			if err := s.ui.stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop Web UI: %w", err))
			}
		}
		if s.conn != nil {
			_ = s.conn.Close()
		}
		if s.temporal != nil {
			if err := s.temporal.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop Temporal server: %w", err))
			}
		}
		s.lock.release()
		if err := errors.Join(errs...); err != nil {
			s.stopErr = fmt.Errorf("devserver: %w", err)
		}
	})
	return s.stopErr
}
