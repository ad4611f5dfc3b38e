package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func TestCompactSessionSettings(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"null", "", ""},
		{" {} ", "", ""},
		{`{ "b": 1, "a": "é<>&", "n": 1.50, "big": 12345678901234567890 }`, `{"a":"é<>&","b":1,"big":12345678901234567890,"n":1.50}`, ""},
		{`{"a":"\u00e9"}`, `{"a":"é"}`, ""},
		{`"fast"`, "", "one JSON object, not a string"},
		{`[1]`, "", "one JSON object, not an array"},
		{`{"a":1} {}`, "", "data after the object"},
		{`{"a":`, "", "not JSON"},
	} {
		got, err := wire.CompactSessionSettings([]byte(tt.in))
		if tt.err != "" {
			if !errors.Is(err, wire.ErrInvalidSessionSettings) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestSessionSettingsSize: the client refuses more than 16 KiB of compact
// JSON; the session takes 1 KiB more; non-ASCII counts as UTF-8 bytes.
func TestSessionSettingsSize(t *testing.T) {
	of := func(n int) []byte { // compact JSON of exactly n bytes
		return []byte(`{"k":"` + strings.Repeat("x", n-len(`{"k":""}`)) + `"}`)
	}
	if _, err := wire.CheckSessionSettings(of(wire.MaxSessionSettingsBytes), 0); err != nil {
		t.Errorf("16 KiB: %v", err)
	}
	if _, err := wire.CheckSessionSettings(of(wire.MaxSessionSettingsBytes+1), 0); !errors.Is(err, wire.ErrInvalidSessionSettings) || !strings.Contains(err.Error(), "16385 bytes") {
		t.Errorf("16 KiB + 1 at the client: %v", err)
	}
	if _, err := wire.CheckSessionSettings(of(wire.MaxSessionSettingsBytes+wire.SessionSettingsToleranceBytes), wire.SessionSettingsToleranceBytes); err != nil {
		t.Errorf("17 KiB at the session: %v", err)
	}
	if _, err := wire.CheckSessionSettings(of(wire.MaxSessionSettingsBytes+wire.SessionSettingsToleranceBytes+1), wire.SessionSettingsToleranceBytes); err == nil {
		t.Error("17 KiB + 1 at the session: accepted")
	}
	// 8,000 "é" escaped as \u00e9 are 48,000 bytes of input but 16,000 of
	// compact JSON.
	escaped := []byte(`{"k":"` + strings.Repeat(`\u00e9`, 8000) + `"}`)
	if text, err := wire.CheckSessionSettings(escaped, 0); err != nil || len(text) != 16008 {
		t.Errorf("escaped non-ASCII: %d bytes, %v", len(text), err)
	}
}
