package config

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldError is one problem with one key of the configuration.
type FieldError struct {
	// Path is the key path, such as agents[1].tool_policies.refund.effect,
	// or empty when the problem is with the whole document. Map keys that
	// are not plain words are quoted: plugins["my.plugin"].
	Path string
	// Line is the 1-based line in the YAML document, or 0 when unknown
	// (always 0 from Validate, which sees only the struct).
	Line    int
	Message string
}

// Error returns "path: message".
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Message
	}
	return e.Path + ": " + e.Message
}

// ValidationError lists every problem found in a configuration, in the order
// found. Load and LoadBytes return it for any problem with the document's
// content; Validate returns it for any problem with the struct.
type ValidationError struct {
	File   string // the file passed to Load; empty otherwise
	Errors []*FieldError
}

// Error lists one problem per line, each prefixed with file:line: when the
// position is known, like a compiler.
func (e *ValidationError) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case e.File != "" && fe.Line > 0:
			fmt.Fprintf(&b, "%s:%d: ", e.File, fe.Line)
		case e.File != "":
			b.WriteString(e.File + ": ")
		case fe.Line > 0:
			fmt.Fprintf(&b, "line %d: ", fe.Line)
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Unwrap returns the individual *FieldError values, for errors.As.
func (e *ValidationError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		errs[i] = fe
	}
	return errs
}

// keyPath returns the path of key under parent: parent.key for plain words,
// parent["odd key"] otherwise.
func keyPath(parent, key string) string {
	if !isPlainKey(key) {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// indexPath returns the path of element i of the sequence at parent.
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func isPlainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// parentPath strips the last element from a path made by keyPath and
// indexPath.
func parentPath(p string) string {
	last := 0
	for i := 0; i < len(p); {
		switch p[i] {
		case '.':
			last = i
			i++
		case '[':
			last = i
			if strings.HasPrefix(p[i+1:], `"`) {
				q, err := strconv.QuotedPrefix(p[i+1:])
				if err != nil {
					return ""
				}
				i += 1 + len(q)
			} else {
				i++
			}
		default:
			i++
		}
	}
	return p[:last]
}
