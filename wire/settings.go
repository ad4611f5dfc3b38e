package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Session settings are one JSON object per session, such as {"model":
// "fast"}, that the application sets at start and replaces with
// update_session_settings. A turn reads the settings it started with; the
// runner decides what they mean (Stepwise picks the model with them).
// Never put a secret in them: snapshots show them.
const (
	// MaxSessionSettingsBytes bounds the settings' compact JSON (UTF-8,
	// non-ASCII unescaped). The client refuses more before it sends.
	MaxSessionSettingsBytes = 16 << 10
	// SessionSettingsToleranceBytes is what the session accepts past
	// MaxSessionSettingsBytes, for encoders that write some characters
	// differently.
	SessionSettingsToleranceBytes = 1 << 10
	// InvalidStartSessionSettingsReason begins the reason a session fails
	// with at once, without a retry, when it starts with settings it cannot
	// take.
	InvalidStartSessionSettingsReason = "invalid start session settings"
)

// ErrInvalidSessionSettings reports settings that are not one JSON object
// or are too large.
var ErrInvalidSessionSettings = errors.New("invalid session settings")

// CompactSessionSettings returns the canonical text of settings: compact
// JSON of one object, keys sorted, non-ASCII and <, >, & unescaped, numbers
// as written. Empty input and "null" give "" (no settings); anything else
// that is not one object is ErrInvalidSessionSettings. It checks no size.
func CompactSessionSettings(raw []byte) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("%w: not JSON: %v", ErrInvalidSessionSettings, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("%w: data after the object", ErrInvalidSessionSettings)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		kind := map[bool]string{true: "an array", false: "a string, number or boolean"}[isArray(v)]
		return "", fmt.Errorf("%w: they must be one JSON object, not %s", ErrInvalidSessionSettings, kind)
	}
	if len(obj) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidSessionSettings, err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// CheckSessionSettings is CompactSessionSettings with the size limit
// (MaxSessionSettingsBytes plus tolerance bytes).
func CheckSessionSettings(raw []byte, tolerance int) (string, error) {
	text, err := CompactSessionSettings(raw)
	if err != nil {
		return "", err
	}
	if len(text) > MaxSessionSettingsBytes+tolerance {
		return "", fmt.Errorf("%w: %d bytes of compact JSON; at most %d", ErrInvalidSessionSettings, len(text), MaxSessionSettingsBytes)
	}
	return text, nil
}

// UpdateSessionSettingsRequest is the input of update_session_settings:
// the settings that replace the session's ({} clears them).
type UpdateSessionSettingsRequest struct {
	SessionSettings json.RawMessage `json:"session_settings"`
}

func isArray(v any) bool {
	_, ok := v.([]any)
	return ok
}
