package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/events"
)

// redisPoolSize bounds the connections to Redis of one process. Each
// session that this process's SSE readers follow holds one in a blocking
// read (one per session, whatever its number of readers); the publisher
// pipelines on a few.
const redisPoolSize = 1024

// openEvents builds the event broker the config names. A Redis that does
// not answer within ten seconds fails the start, naming the variable that
// holds its URL (never the URL: it may hold a password).
func openEvents(ctx context.Context, e config.Events, logger *slog.Logger) (events.Broker, error) {
	if e.Backend != config.EventsRedis {
		return events.NewMemoryBroker(events.MemoryOptions{
			CapacityBytes: e.CapacityBytes, MaxTotalBytes: e.MaxTotalBytes, IdleTTL: e.IdleTTL,
		}), nil
	}
	raw, err := e.RedisURL()
	if err != nil {
		return nil, err
	}
	key, err := e.TokenKey()
	if err != nil {
		return nil, err
	}
	opts, err := redis.ParseURL(raw.Reveal())
	if err != nil {
		return nil, fmt.Errorf("events.url_env: the URL in %s is not a Redis URL (want redis://[user:password@]host:port/db)", e.URLEnv)
	}
	opts.PoolSize = redisPoolSize
	opts.ClientName = "dex-agent-worker"
	setRedisLogger(logger)
	rdb := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("events: cannot reach Redis at %s (the URL in %s): %w", opts.Addr, e.URLEnv, err)
	}
	b, err := events.NewRedisBroker(events.RedisOptions{
		Client: rdb, KeyPrefix: e.KeyPrefix, MaxBytesPerSession: e.MaxBytesPerSession, TTL: e.TTL,
		TokenKey: []byte(key.Reveal()), Logger: logger,
	})
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	logger.Info("live events in Redis Streams", "address", opts.Addr, "db", opts.DB, "key_prefix", cmpOr(e.KeyPrefix, events.DefaultRedisKeyPrefix))
	return b, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var redisLoggerOnce sync.Once

// setRedisLogger sends go-redis's own messages (pool dial failures) to the
// logs at debug level, once per process: the broker reports what matters.
func setRedisLogger(logger *slog.Logger) {
	redisLoggerOnce.Do(func() { redis.SetLogger(redisLogger{logger}) })
}

type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.Debug("redis client", "message", fmt.Sprintf(format, v...))
}

// serveProbes serves /healthz and /readyz for a worker-role process:
// ready once the Temporal frontend answers.
func (d *Daemon) serveProbes(listen string, logger *slog.Logger) error {
	c := d.client
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if _, err := c.CheckHealth(ctx, &temporalclient.CheckHealthRequest{}); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"Temporal is not reachable"}}` + "\n"))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("serve the health probes on %s: %w", listen, err)
	}
	d.addr = ln.Addr().String()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	d.probes = srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("health probe server stopped", "error", err)
		}
	}()
	logger.Info("health probes listening (role worker: no API)", "address", d.addr)
	return nil
}
