// Package redact removes known secret values from text before it reaches a
// log, an error, a session's history, its events or a model.
//
// The values come from what the worker knows to be secret: the
// environment variables its config grants to plugins (API keys, most
// likely), the Temporal API key and the HTTP API tokens. A runner can only
// leak what it was given, so these cover what its error texts may carry.
package redact

import (
	"cmp"
	"slices"
	"strings"
)

// Placeholder replaces every secret value.
const Placeholder = "<redacted>"

// MinLen is the shortest value that is redacted, so that values such as
// "1" or "true" do not garble every line.
const MinLen = 6

// Redactor replaces secret values in strings. The zero value and a nil
// *Redactor replace nothing. It is safe for concurrent use.
type Redactor struct{ r *strings.Replacer }

// New returns a Redactor of values; values shorter than MinLen are ignored.
func New(values ...string) *Redactor {
	var keep []string
	for _, v := range values {
		if len(v) >= MinLen && !slices.Contains(keep, v) {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return &Redactor{}
	}
	// Longest first, so a value that contains another is replaced whole.
	slices.SortStableFunc(keep, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(keep))
	for _, v := range keep {
		pairs = append(pairs, v, Placeholder)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret value replaced by Placeholder.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}
