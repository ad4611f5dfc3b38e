package runnerhost

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
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

// go-plugin's error for a plugin whose handshake names a protocol version
// the host does not speak.
const incompatiblePrefix = "incompatible API version with plugin. Plugin version: "

// contractVersionError is a handshake refused because the runner speaks a
// runner contract version this worker does not know.
type contractVersionError struct {
	version string
	err     error
}

func (e *contractVersionError) Error() string {
	return fmt.Sprintf("the runner speaks runner contract version %s; this worker speaks version %d (dex.runner.v%d): "+
		"use a build of the runner for contract version %d, or a worker that knows version %s (see docs/runners.md, Compatibility)",
		e.version, pluginapi.ProtocolVersion, pluginapi.ProtocolVersion, pluginapi.ProtocolVersion, e.version)
}

func (e *contractVersionError) Unwrap() error { return e.err }

// handshakeError returns a *contractVersionError for a handshake that names
// another contract version, a *stdoutBeforeServeError for go-plugin's error
// of a handshake whose first stdout line was something else, and err itself
// otherwise. The line is redacted before it is cut, so a cut never leaves
// part of a secret.
func handshakeError(err error, redact *redactor) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, incompatiblePrefix); ok {
		version, _, _ := strings.Cut(rest, ",")
		return &contractVersionError{version: truncate(version, 20), err: err}
	}
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
