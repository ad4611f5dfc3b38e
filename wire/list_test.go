package wire

import (
	"strings"
	"testing"
)

func TestTitleOf(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for in, want := range map[string]string{
		"refund order 7":                  "refund order 7",
		"\n\n  refund   order 7 \nthanks": "refund order 7",
		"   \n\t":                         "",
		long:                              strings.TrimSpace(long[:79]) + "…",
	} {
		if got := TitleOf(in); got != want {
			t.Errorf("TitleOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := []rune(TitleOf(strings.Repeat("é", 200))); len(got) != MaxTitleRunes {
		t.Errorf("a long title has %d runes", len(got))
	}
}
