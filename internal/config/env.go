package config

import (
	"fmt"
	"strings"
)

// expandEnv replaces ${VAR} with the value of the environment variable VAR,
// ${VAR:-default} with default when VAR is unset or empty, and $$ with $.
// A $ followed by anything else is kept. It reports whether s referenced a
// variable. The default ends at the first }, and is taken literally.
func expandEnv(s string, lookup func(string) (string, bool)) (string, bool, error) {
	if !strings.Contains(s, "$") {
		return s, false, nil
	}
	var b strings.Builder
	used := false
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", used, fmt.Errorf("unterminated ${ (write $$ for a literal $)")
			}
			ref := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(ref, ":-")
			if !isEnvName(name) {
				return "", used, fmt.Errorf("invalid reference ${%s}: want ${NAME} or ${NAME:-default} (write $$ for a literal $)", ref)
			}
			used = true
			v, ok := lookup(name)
			switch {
			case hasDef && v == "":
				v = def
			case !ok:
				return "", used, fmt.Errorf("environment variable %s is not set", name)
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), used, nil
}

// isEnvName reports whether s is a portable environment variable name:
// a letter or underscore, then letters, digits or underscores.
func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
