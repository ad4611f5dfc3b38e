package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestHandlerRedactsEveryPartOfARecord(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	var buf bytes.Buffer
	base := slog.New(Handler(slog.NewJSONHandler(&buf, nil), New(secret)))
	l := base.With("component", "steps", "dsn", "postgres://u:"+secret+"@db/x").WithGroup("call")
	l.Info("the runner said "+secret,
		"error", errors.New("upstream rejected "+secret),
		"detail", struct{ Key string }{secret},
		slog.Group("request", "header", "Bearer "+secret),
		"kept", "fine", "n", 3)
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Fatalf("a secret reached the log: %s", out)
	}
	for _, want := range []string{`"msg":"the runner said <redacted>"`, `"error":"upstream rejected <redacted>"`, `"header":"Bearer <redacted>"`,
		`"dsn":"postgres://u:<redacted>@db/x"`, `"kept":"fine"`, `"n":3`, `"component":"steps"`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in %s", want, out)
		}
	}
	// Without values, the handler is the next one.
	next := slog.NewJSONHandler(&buf, nil)
	if Handler(next, New()) != slog.Handler(next) {
		t.Error("a Redactor without values wrapped the handler")
	}
}
