package devserver

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger adapts the Temporal server's log.Logger to a *slog.Logger.
// Only records at or above minLevel are forwarded (the server is very chatty
// at INFO); tags are converted lazily, only for records that pass the filter.
//
// Panic and Fatal are logged at ERROR with a "severity" attribute and do not
// panic or exit: an embedded dev server must not take the host process down.
//
// Once the server is being stopped, records are dropped: shutdown makes every
// service log cancelled calls and refused connections, none of which is
// actionable (Stop reports real failures as its error).
type serverLogger struct {
	out      *slog.Logger
	minLevel slog.Level
	stopping *atomic.Bool // shared with loggers derived through With
	tags     []tag.Tag    // prepended by With
}

// benignWarnings are messages the server logs at WARN on every start of this
// configuration; they carry no information for a dev server user.
var benignWarnings = []string{
	// The frontend HTTP API (and with it Nexus over HTTP) is deliberately off.
	"HTTP API port has not been set",
}

var (
	_ log.Logger     = (*serverLogger)(nil)
	_ log.WithLogger = (*serverLogger)(nil)
)

func newServerLogger(out *slog.Logger, minLevel slog.Level) *serverLogger {
	return &serverLogger{out: out, minLevel: minLevel, stopping: &atomic.Bool{}}
}

// beginStop makes the logger drop everything from now on.
func (l *serverLogger) beginStop() { l.stopping.Store(true) }

func (l *serverLogger) Debug(msg string, tags ...tag.Tag) { l.log(slog.LevelDebug, "", msg, tags) }
func (l *serverLogger) Info(msg string, tags ...tag.Tag)  { l.log(slog.LevelInfo, "", msg, tags) }
func (l *serverLogger) Warn(msg string, tags ...tag.Tag)  { l.log(slog.LevelWarn, "", msg, tags) }
func (l *serverLogger) Error(msg string, tags ...tag.Tag) { l.log(slog.LevelError, "", msg, tags) }
func (l *serverLogger) DPanic(msg string, tags ...tag.Tag) {
	l.log(slog.LevelError, "dpanic", msg, tags)
}
func (l *serverLogger) Panic(msg string, tags ...tag.Tag) { l.log(slog.LevelError, "panic", msg, tags) }
func (l *serverLogger) Fatal(msg string, tags ...tag.Tag) { l.log(slog.LevelError, "fatal", msg, tags) }

// With returns a logger that prepends tags to every record.
func (l *serverLogger) With(tags ...tag.Tag) log.Logger {
	if len(tags) == 0 {
		return l
	}
	merged := make([]tag.Tag, 0, len(l.tags)+len(tags))
	merged = append(merged, l.tags...)
	merged = append(merged, tags...)
	return &serverLogger{out: l.out, minLevel: l.minLevel, stopping: l.stopping, tags: merged}
}

func (l *serverLogger) log(level slog.Level, severity, msg string, tags []tag.Tag) {
	if level < l.minLevel || l.stopping.Load() {
		return
	}
	if level == slog.LevelWarn {
		for _, prefix := range benignWarnings {
			if strings.HasPrefix(msg, prefix) {
				return
			}
		}
	}
	ctx := context.Background()
	if !l.out.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, len(l.tags)+len(tags)+2)
	attrs = append(attrs, slog.String("component", "temporal-server"))
	if severity != "" {
		attrs = append(attrs, slog.String("severity", severity))
	}
	for _, t := range l.tags {
		attrs = append(attrs, tagAttr(t))
	}
	for _, t := range tags {
		attrs = append(attrs, tagAttr(t))
	}
	l.out.LogAttrs(ctx, level, msg, attrs...)
}

func tagAttr(t tag.Tag) slog.Attr {
	v := t.Value()
	if err, ok := v.(error); ok {
		return slog.String(t.Key(), err.Error())
	}
	return slog.Any(t.Key(), v)
}
