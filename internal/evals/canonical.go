package evals

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Canonical is a tool call's arguments in the form eval run matches them
// by: JSON with object keys sorted, no insignificant whitespace, and every
// number written from its float64 value (1, 1.0 and 1e0 are "1"; 0.1 is
// "0.1"; integers past 2^53 lose what float64 cannot hold). Strings keep
// every character: "a b" and "a  b" differ. Arguments that are not JSON
// are matched as they are, byte for byte.
func Canonical(args string) string {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	if _, err := dec.Token(); err == nil {
		return args // more than one value: not one JSON document
	}
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			b.WriteString(x.String())
			return
		}
		if f == 0 {
			f = 0 // -0 is 0
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case string:
		writeString(b, x)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}
