package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that replaces the secret values in every
// record's message and attribute values (strings, errors, and what prints
// with %v) before next sees them, so that no log line carries a secret,
// whichever component wrote it. A Redactor with no values returns next.
func Handler(next slog.Handler, r *Redactor) slog.Handler {
	if r == nil || r.r == nil {
		return next
	}
	return &handler{next: next, r: r}
}

type handler struct {
	next slog.Handler
	r    *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(clean), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), r: h.r}
}

// attr redacts one attribute's value.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); h.r.String(s) != s {
			return slog.String(a.Key, h.r.String(s))
		}
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = h.attr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		var s string
		if err, ok := v.Any().(error); ok && err != nil {
			s = err.Error()
		} else {
			s = fmt.Sprintf("%+v", v.Any())
		}
		if h.r.String(s) != s {
			return slog.String(a.Key, h.r.String(s))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
