package runnerhost

// hclog stays inside this file: go-plugin logs through an hclog.Logger, and
// hclogAdapter forwards every record into the host's *slog.Logger. The
// other writers here route a plugin's output lines into the same logger.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// levelTrace is hclog's trace level in slog terms.
const levelTrace = slog.LevelDebug - 4

// redactor replaces the values of a plugin's environment (API keys, most
// likely) in everything the plugin writes before it reaches a log or an
// error message. Values shorter than minRedactedLen are left alone, so
// "1" or "true" do not garble every line.
type redactor struct{ r *strings.Replacer }

const minRedactedLen = 6

func newRedactor(env []string) *redactor {
	var values []string
	for _, kv := range env {
		if _, v, ok := strings.Cut(kv, "="); ok && len(v) >= minRedactedLen {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return &redactor{}
	}
	// Longest first, so a value that contains another is replaced whole.
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "<redacted>")
	}
	return &redactor{r: strings.NewReplacer(pairs...)}
}

func (r *redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

func (r *redactor) args(args []any) []any {
	if r == nil || r.r == nil {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = r.value(a)
	}
	return out
}

// value redacts v, looking into the shapes decoded JSON and go-plugin's
// own log arguments take. Any other value is redacted through its
// fmt.Sprint text when that text contains a secret.
func (r *redactor) value(v any) any {
	switch v := v.(type) {
	case nil, bool, int, int32, int64, uint, uint32, uint64, float32, float64:
		return v
	case string:
		return r.String(v)
	case error:
		return r.String(v.Error())
	case []string:
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = r.String(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = r.value(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.String(k)] = r.value(e)
		}
		return out
	}
	s := fmt.Sprint(v)
	if red := r.String(s); red != s {
		return red
	}
	return v
}

// hclogAdapter is an hclog.Logger that writes to a *slog.Logger.
type hclogAdapter struct {
	logger  *slog.Logger
	redact  *redactor
	name    string
	implied []any
	// stopping is set once the host stops the process (see exitLevel).
	stopping *atomic.Bool
}

func newHCLogAdapter(logger *slog.Logger, redact *redactor, stopping *atomic.Bool) *hclogAdapter {
	return &hclogAdapter{logger: logger, redact: redact, stopping: stopping}
}

// processExitedMsg is go-plugin's record of a plugin process's exit; it
// logs it at ERROR whenever the exit status is not 0.
const processExitedMsg = "plugin process exited"

// exitLevel returns the level of go-plugin's exit record. An exit the host
// caused (Close, or a kill after a failed start) is not an error, whatever
// the status: INFO. A plugin stopped by SIGTERM or SIGINT that the host did
// not send (a signal to the whole process group, say) did not crash: WARN.
// Anything else is a crash and stays at ERROR.
func (a *hclogAdapter) exitLevel(level hclog.Level, args []any) (hclog.Level, []any) {
	if level < hclog.Warn {
		return level, args
	}
	if a.stopping != nil && a.stopping.Load() {
		return hclog.Info, append(slices.Clip(args), "stopped_by_host", true)
	}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "error" && (args[i+1] == "signal: terminated" || args[i+1] == "signal: interrupt") {
			return hclog.Warn, args
		}
	}
	return level, args
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return levelTrace
	case hclog.Debug, hclog.NoLevel:
		return slog.LevelDebug
	case hclog.Info:
		return slog.LevelInfo
	case hclog.Warn:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// enabled reports whether the slog logger takes records of level l. hclog's
// interface carries no ctx, so neither do these records (slog.Logger.Info
// does the same).
func (a *hclogAdapter) enabled(l hclog.Level) bool {
	return a.logger.Enabled(context.Background(), slogLevel(l))
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if msg == processExitedMsg {
		level, args = a.exitLevel(level, args)
	}
	if level == hclog.Off || !a.enabled(level) {
		return
	}
	attrs := make([]any, 0, len(a.implied)+len(args)+2)
	if a.name != "" {
		attrs = append(attrs, "logger", a.name)
	}
	attrs = append(attrs, a.implied...)
	attrs = append(attrs, a.redact.args(renameKeys(args))...)
	a.logger.Log(context.Background(), slogLevel(level), a.redact.String(msg), attrs...)
}

// renameKeys renames go-plugin's "plugin" argument (a path), which would
// repeat the host's plugin=<name> key.
func renameKeys(args []any) []any {
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "plugin" {
			args = slices.Clone(args)
			args[i] = "plugin_path"
		}
	}
	return args
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.implied = append(append([]any(nil), a.implied...), a.redact.args(args)...)
	return &c
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

// SetLevel does nothing: the slog handler decides the level.
func (a *hclogAdapter) SetLevel(hclog.Level) {}

// GetLevel reports the lowest hclog level the slog handler takes.
func (a *hclogAdapter) GetLevel() hclog.Level {
	for l := hclog.Trace; l <= hclog.Error; l++ {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &lineWriter{line: func(s string) { a.Info(s) }}
}

// lineWriter calls line for every complete line written to it. A line
// longer than maxLineLen is cut there.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	line func(string)
}

const maxLineLen = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			if len(w.buf) >= maxLineLen {
				w.line(string(w.buf))
				w.buf = w.buf[:0]
			}
			return len(p), nil
		}
		w.line(strings.TrimSuffix(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
}

// outputLogger returns a writer that logs each line a plugin writes to one
// of its standard streams after the handshake (a Go plugin's os.Stdout and
// os.Stderr are piped to the host once Serve runs).
func outputLogger(logger *slog.Logger, redact *redactor, stream string) io.Writer {
	return &lineWriter{line: func(s string) {
		if s == "" {
			return
		}
		logger.Info(redact.String(s), "stream", stream)
	}}
}

// tail keeps the last lines of a plugin's raw stderr, for the error of a
// failed start.
type tail struct {
	mu    sync.Mutex
	lines []string
	w     *lineWriter
}

const (
	tailLines   = 20
	tailLineLen = 512
)

func newTail() *tail {
	t := &tail{}
	t.w = &lineWriter{line: t.add}
	return t
}

func (t *tail) Write(p []byte) (int, error) { return t.w.Write(p) }

func (t *tail) add(s string) {
	if strings.TrimSpace(s) == "" {
		return
	}
	if len(s) > tailLineLen {
		s = s[:tailLineLen] + "..."
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// String returns the kept lines, and a last line without its newline yet,
// joined by newlines.
func (t *tail) String() string {
	t.w.mu.Lock()
	partial := strings.TrimSpace(string(t.w.buf))
	t.w.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if partial != "" {
		lines = append(lines[:len(lines):len(lines)], partial)
	}
	return strings.Join(lines, "\n")
}
