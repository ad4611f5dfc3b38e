// Package approvaltext renders an approval as the action it approves, for
// people: the operator writes a template per tool in the config
// (approval_text: "Refund {amount_cents|usd} on order {order_id}"), and the
// HTTP API fills it from the call's arguments.
//
// A placeholder is {name} or {name|filter}: name is a top-level argument
// (letters, digits, _ and -), and filter is one of
//   - usd: an integer number of cents as dollars ("$77.50");
//   - json: the argument's JSON as the model wrote it.
//
// Without a filter a string argument is its text and any other value its
// JSON. "{{" and "}}" are literal braces. A call whose arguments lack a
// placeholder's argument, or give usd a value that is not a whole number,
// renders nothing: the page then shows the tool and its arguments.
package approvaltext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// MaxLen bounds a rendered text; longer ones end with "…".
const MaxLen = 500

// Template is a parsed approval_text.
type Template struct {
	parts []part
}

type part struct {
	text   string // literal text, when name is ""
	name   string
	filter string
}

var filters = map[string]bool{"": true, "usd": true, "json": true}

// Parse parses an approval_text; the error names the problem and where.
func Parse(s string) (*Template, error) {
	var t Template
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '}':
			return nil, fmt.Errorf("a lone '}' at byte %d (write }} for a brace)", i)
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("the placeholder at byte %d has no closing '}'", i)
			}
			body := s[i+1 : i+end]
			name, filter, _ := strings.Cut(body, "|")
			name, filter = strings.TrimSpace(name), strings.TrimSpace(filter)
			if !validName(name) {
				return nil, fmt.Errorf("placeholder {%s}: %q is not an argument name (letters, digits, _ and -)", body, name)
			}
			if !filters[filter] {
				return nil, fmt.Errorf("placeholder {%s}: unknown filter %q (want usd or json)", body, filter)
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, part{text: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part{name: name, filter: filter})
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{text: lit.String()})
	}
	if len(t.parts) == 0 {
		return nil, errors.New("is empty")
	}
	return &t, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Render fills the template from a call's JSON arguments; ok is false when
// the arguments do not fit it (not an object, a missing argument, a usd
// value that is not a whole number of cents).
func (t *Template) Render(arguments string) (text string, ok bool) {
	var args map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.text)
			continue
		}
		raw, found := args[p.name]
		if !found {
			return "", false
		}
		v, ok := value(raw, p.filter)
		if !ok {
			return "", false
		}
		b.WriteString(v)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if r := []rune(out); len(r) > MaxLen {
		out = string(r[:MaxLen-1]) + "…"
	}
	return out, true
}

func value(raw json.RawMessage, filter string) (string, bool) {
	switch filter {
	case "json":
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return "", false
		}
		return c.String(), true
	case "usd":
		n, ok := new(big.Int).SetString(strings.TrimSpace(string(raw)), 10)
		if !ok {
			return "", false
		}
		neg := n.Sign() < 0
		n.Abs(n)
		dollars, cents := new(big.Int).QuoRem(n, big.NewInt(100), new(big.Int))
		s := fmt.Sprintf("$%s.%02d", groupThousands(dollars.String()), cents.Int64())
		if neg {
			s = "-" + s
		}
		return s, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var c bytes.Buffer
	if json.Compact(&c, raw) != nil {
		return "", false
	}
	return c.String(), true
}

// groupThousands writes 1234567 as 1,234,567.
func groupThousands(d string) string {
	if len(d) <= 3 {
		return d
	}
	var b strings.Builder
	pre := len(d) % 3
	if pre > 0 {
		b.WriteString(d[:pre])
	}
	for i := pre; i < len(d); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(d[i : i+3])
	}
	return b.String()
}
