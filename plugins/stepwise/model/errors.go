package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// permanentStatus reports whether an HTTP status means retrying cannot help.
func permanentStatus(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// contextLengthExceeded reports whether a provider's error text says the
// input is too long for the model.
func contextLengthExceeded(text string) bool {
	t := strings.ToLower(text)
	for _, s := range []string{"context_length_exceeded", "context length", "context window", "maximum context", "prompt is too long", "too many tokens", "input is too long", "exceeds the context"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// callError builds the error of a failed call: provider and API, the HTTP
// status, and the provider's message, with the API key scrubbed. Statuses
// 400/401/403/404/422 are permanent; everything else is retryable.
type callError struct {
	provider, api string
	key           string
}

func (e callError) prefix() string { return e.provider + " " + e.api }

// wrap classifies err from the SDK, the stream or the context.
func (e callError) wrap(err error) error {
	if err == nil {
		return nil
	}
	var oa *openai.Error
	var an *anthropic.Error
	switch {
	case errors.As(err, &oa):
		return retryAfter(e.status(oa.StatusCode, oa.Type, oa.Code, oa.Message, oa.RawJSON()), oa.Response, time.Now())
	case errors.As(err, &an):
		if an.Response != nil && an.Response.StatusCode == http.StatusOK {
			// An error event in an open stream (overloaded, api_error...).
			return e.streamError(string(an.Type()), an.Message, an.RawJSON())
		}
		return retryAfter(e.status(an.StatusCode, string(an.Type()), "", an.Message, an.RawJSON()), an.Response, time.Now())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: the stream broke mid-answer: %s", e.prefix(), e.scrub(err.Error()))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: the call timed out: %s", e.prefix(), e.scrub(err.Error()))
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: the call was cancelled: %s", e.prefix(), e.scrub(err.Error()))
	}
	return fmt.Errorf("%s: %s", e.prefix(), e.scrub(err.Error()))
}

func (e callError) status(code int, typ, errCode, message, raw string) error {
	detail := message
	if detail == "" {
		detail = raw
	}
	if detail == "" {
		detail = http.StatusText(code)
	}
	if typ != "" && !strings.Contains(detail, typ) {
		detail = typ + ": " + detail
	}
	msg := fmt.Sprintf("%s: HTTP %d", e.prefix(), code)
	if contextLengthExceeded(errCode + " " + message + " " + raw) {
		msg += ": context length exceeded"
	}
	err := errors.New(msg + ": " + e.scrub(truncate(detail, 600)))
	if permanentStatus(code) {
		return pluginapi.Permanent(err)
	}
	return err
}

// streamError classifies an error event inside an open stream. Errors of
// the request itself are permanent; overload and server errors retry.
func (e callError) streamError(typ, message, raw string) error {
	detail := message
	if detail == "" {
		detail = raw
	}
	msg := fmt.Sprintf("%s: the stream reported an error", e.prefix())
	if contextLengthExceeded(typ + " " + detail) {
		msg += ": context length exceeded"
	}
	if typ != "" {
		msg += ": " + typ
	}
	err := errors.New(msg + ": " + e.scrub(truncate(detail, 600)))
	switch typ {
	case "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "context_length_exceeded", "invalid_prompt":
		return pluginapi.Permanent(err)
	}
	if contextLengthExceeded(typ + " " + detail) {
		return pluginapi.Permanent(err)
	}
	return err
}

// retryAfter marks a retryable error with the delay its response asked
// for (RetryAfterDelay), so the session's next attempt waits that long; a
// permanent error, or a response without the headers, is left as it is.
func retryAfter(err error, resp *http.Response, now time.Time) error {
	var perm *pluginapi.PermanentError
	if resp == nil || errors.As(err, &perm) {
		return err
	}
	if d, ok := RetryAfterDelay(resp.Header, now); ok {
		return pluginapi.RetryAfter(err, d)
	}
	return err
}

// RetryAfterDelay reads how long a provider asked to wait before a retry:
// retry-after-ms (milliseconds, which OpenAI sends), else Retry-After in
// seconds or as an HTTP date. False when neither is there or parses to a
// positive delay.
func RetryAfterDelay(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(pluginapi.MaxRetryAfter/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs > 0 && secs < pluginapi.MaxRetryAfter.Seconds() {
			return time.Duration(secs * float64(time.Second)), true
		}
		if secs >= pluginapi.MaxRetryAfter.Seconds() {
			return pluginapi.MaxRetryAfter, true
		}
		return 0, false
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return min(d, pluginapi.MaxRetryAfter), true
		}
	}
	return 0, false
}

// truncated is the error of a stream that ended before the response did.
func (e callError) truncated(what string) error {
	return fmt.Errorf("%s: the stream ended before %s (the connection broke mid-answer)", e.prefix(), what)
}

// scrub removes the API key from text.
func (e callError) scrub(s string) string {
	if len(e.key) >= 4 {
		s = strings.ReplaceAll(s, e.key, "[redacted]")
	}
	return s
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
