package redact

import "testing"

func TestRedactor(t *testing.T) {
	r := New("sk-live-abcdef", "sk-live-abcdef-long", "short", "", "sk-live-abcdef")
	tests := []struct{ in, want string }{
		{"key sk-live-abcdef failed", "key <redacted> failed"},
		{"key sk-live-abcdef-long failed", "key <redacted> failed"},
		{"short values stay: short", "short values stay: short"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Redactor
	if got := none.String("sk-live-abcdef"); got != "sk-live-abcdef" {
		t.Errorf("nil Redactor changed the text: %q", got)
	}
	if got := New().String("abc"); got != "abc" {
		t.Errorf("empty Redactor changed the text: %q", got)
	}
}
