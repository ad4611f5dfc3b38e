package runnerhost

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// go-plugin's error when the first line on a plugin's stdout is not a
// handshake line starts with unrecognizedPrefix; it adds noReadSuffix when
// the plugin closed stdout without printing a line at all.
const (
	unrecognizedPrefix = "Unrecognized remote plugin message: "
	noReadSuffix       = "Failed to read any lines from plugin's stdout"
	// maxShownLine bounds the stray line quoted in the error.
	maxShownLine = 200
)

// stdoutBeforeServeError is a handshake that failed because the plugin
// printed something to stdout before pluginapi.Serve wrote its handshake
// line there.
type stdoutBeforeServeError struct {
	line string // redacted and truncated
	err  error  // go-plugin's error
}

func (e *stdoutBeforeServeError) Error() string {
	return fmt.Sprintf("the plugin printed to stdout before pluginapi.Serve: %q; write logs to stderr", e.line)
}

func (e *stdoutBeforeServeError) Unwrap() error { return e.err }

// handshakeError returns a *stdoutBeforeServeError for go-plugin's error of
// a handshake whose first stdout line was something else, and err itself
// otherwise. The line is redacted before it is cut, so a cut never leaves
// part of a secret.
func handshakeError(err error, redact *redactor) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, unrecognizedPrefix)
	if !ok || strings.Contains(msg, noReadSuffix) {
		return err
	}
	line, _, _ := strings.Cut(rest, "\n")
	return &stdoutBeforeServeError{line: truncate(redact.String(line), maxShownLine), err: err}
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
