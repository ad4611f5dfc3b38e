package main

import (
	"path/filepath"
	"testing"
)

func TestCaseFileNameStaysInItsDirectory(t *testing.T) {
	for id, want := range map[string]string{
		"session-3f2a": "session-3f2a.jsonl",
		"../../etc/x":  "..%2F..%2Fetc%2Fx.jsonl",
		`a\b`:          "a%5Cb.jsonl",
		"..":           "%2E%2E.jsonl",
		"100%/done":    "100%25%2Fdone.jsonl",
		"orders.sub-1": "orders.sub-1.jsonl",
	} {
		if got := caseFileName(id); got != want || filepath.Base(got) != got {
			t.Errorf("caseFileName(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestSecretFormsInJSON(t *testing.T) {
	got := secretForms([]string{`pa"ss\word-0123456789`, "plain-secret-0123456789"})
	want := []string{`pa"ss\word-0123456789`, "plain-secret-0123456789", `pa\"ss\\word-0123456789`}
	if len(got) != len(want) {
		t.Fatalf("secretForms = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("secretForms[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
