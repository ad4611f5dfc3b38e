package approvaltext

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct {
		tmpl, args, want string
		ok               bool
	}{
		{"Refund {amount_cents|usd} on order {order_id}", `{"order_id":"9","amount_cents":7750}`, "Refund $77.50 on order 9", true},
		{"Refund {amount_cents|usd}", `{"amount_cents":123456789}`, "Refund $1,234,567.89", true},
		{"Refund {amount_cents|usd}", `{"amount_cents":-5}`, "Refund -$0.05", true},
		{"Refund {amount_cents|usd}", `{"amount_cents":77.5}`, "", false},
		{"Refund {amount_cents|usd}", `{"amount_cents":"7750"}`, "", false},
		{"Close {order_id}", `{}`, "", false},
		{"Close {order_id}", `[1]`, "", false},
		{"Close {order_id}", `not json`, "", false},
		{"Tag {tags} as {tags|json}", `{"tags":["a","b"]}`, `Tag ["a","b"] as ["a","b"]`, true},
		{"Send {{draft}} to {to}", `{"to":"ann@example.com"}`, "Send {draft} to ann@example.com", true},
		{"Say {text}", `{"text":"two\n\nlines"}`, "Say two lines", true},
		{"Count {n}", `{"n":12345678901234567890}`, "Count 12345678901234567890", true},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.tmpl)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.tmpl, err)
		}
		got, ok := tmpl.Render(tt.args)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q with %s = %q, %v; want %q, %v", tt.tmpl, tt.args, got, ok, tt.want, tt.ok)
		}
	}
	long, _ := Parse("{text}")
	if got, _ := long.Render(`{"text":"` + strings.Repeat("é", 600) + `"}`); len([]rune(got)) != MaxLen || !strings.HasSuffix(got, "…") {
		t.Errorf("a long text renders %d runes", len([]rune(got)))
	}
}

func TestParseErrors(t *testing.T) {
	for tmpl, want := range map[string]string{
		"":                     "is empty",
		"Refund {amount":       "the placeholder at byte 7 has no closing '}'",
		"Refund }":             "a lone '}' at byte 7",
		"Refund {}":            `placeholder {}: "" is not an argument name`,
		"Refund {a b}":         `placeholder {a b}: "a b" is not an argument name`,
		"Refund {amount|euro}": `placeholder {amount|euro}: unknown filter "euro" (want usd or json)`,
	} {
		if _, err := Parse(tmpl); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", tmpl, err, want)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("Refund {amount_cents|usd} on order {order_id}", `{"order_id":"9","amount_cents":7750}`)
	f.Add("{a|json}{{}}", `{"a":{"b":[1,2]}}`)
	f.Fuzz(func(t *testing.T, tmpl, args string) {
		p, err := Parse(tmpl)
		if err != nil {
			return
		}
		if out, ok := p.Render(args); ok && len([]rune(out)) > MaxLen {
			t.Fatalf("rendered %d runes", len([]rune(out)))
		}
	})
}
