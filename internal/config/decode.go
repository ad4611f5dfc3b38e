package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The decoder maps a YAML node tree onto the Config struct by its yaml
// tags. It is strict (an unknown key is an error), expands ${VAR} in scalar
// values (never in keys, and after parsing, so a value cannot add
// structure), records the line of every key path for error messages, and
// collects every problem instead of stopping at the first one.
//
// Viper is not used: it lowercases every key and splits keys on dots, which
// would change tool names, plugin names and runner_config keys.

const (
	// maxNodes bounds how many nodes a document may expand to through
	// aliases ("billion laughs").
	maxNodes = 1 << 18
	// maxErrors bounds the problems reported for one document.
	maxErrors = 100
)

var (
	durationType     = reflect.TypeFor[time.Duration]()
	messageLimitType = reflect.TypeFor[MessageLimit]()
)

// defaulter is implemented by structs with defaults. The decoder calls
// setDefaults on each new struct before decoding into it.
type defaulter interface{ setDefaults() }

type decoder struct {
	lookupEnv func(string) (string, bool)
	errs      []*FieldError
	lines     map[string]int      // key path -> line of its key
	fromEnv   map[string]bool     // key paths of values that used ${VAR}
	active    map[*yaml.Node]bool // nodes being decoded, to stop alias cycles
	nodes     int
}

func newDecoder(lookupEnv func(string) (string, bool)) *decoder {
	return &decoder{
		lookupEnv: lookupEnv,
		lines:     make(map[string]int),
		fromEnv:   make(map[string]bool),
		active:    make(map[*yaml.Node]bool),
	}
}

func (d *decoder) errorf(path string, n *yaml.Node, format string, args ...any) {
	if len(d.errs) <= maxErrors {
		d.errs = append(d.errs, &FieldError{Path: path, Line: n.Line, Message: fmt.Sprintf(format, args...)})
	}
}

// line returns the line of the key at path, or of its nearest ancestor that
// the document sets; 0 if none.
func (d *decoder) line(path string) int {
	for path != "" {
		if l, ok := d.lines[path]; ok {
			return l
		}
		path = parentPath(path)
	}
	return 0
}

// failedAt reports whether decoding failed at path or at one of its
// ancestors.
func (d *decoder) failedAt(path string) bool {
	for _, fe := range d.errs {
		if fe.Path == "" {
			continue
		}
		for p := path; p != ""; p = parentPath(p) {
			if p == fe.Path {
				return true
			}
		}
	}
	return false
}

// enter counts n against the node budget and follows it if it is an alias.
// The caller must call leave when done with the returned node.
func (d *decoder) enter(path string, n *yaml.Node) (_ *yaml.Node, leave func(), ok bool) {
	d.nodes++
	if d.nodes > maxNodes {
		if d.nodes == maxNodes+1 {
			d.errorf(path, n, "the document is too large: its aliases expand to more than %d nodes", maxNodes)
		}
		return nil, nil, false
	}
	t := n
	if n.Kind == yaml.AliasNode {
		t = n.Alias
	}
	// Only the nodes being decoded are active, so an alias to an active
	// node is an alias to one of its own ancestors.
	if t == nil || d.active[t] {
		d.errorf(path, n, "alias *%s refers to a node that contains it", n.Value)
		return nil, nil, false
	}
	d.active[t] = true
	return t, func() { delete(d.active, t) }, true
}

// decode decodes n into v. A null leaves v as it is, which keeps defaults.
func (d *decoder) decode(path string, n *yaml.Node, v reflect.Value) {
	n, leave, ok := d.enter(path, n)
	if !ok {
		return
	}
	defer leave()
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		if v.Type() == messageLimitType {
			v.Set(reflect.ValueOf(MessageLimit{Unlimited: true}))
		}
		return
	}
	d.decodeNode(path, n, v)
}

// decodeNode decodes the node n, neither an alias nor null, into v.
func (d *decoder) decodeNode(path string, n *yaml.Node, v reflect.Value) {
	switch v.Type() {
	case durationType:
		d.duration(path, n, v)
		return
	case messageLimitType:
		d.messageLimit(path, n, v)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(path, n, v)
	case reflect.Map:
		d.mapping(path, n, v)
	case reflect.Slice:
		d.sequence(path, n, v)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(newValue(v.Type().Elem()).Addr())
		}
		d.decodeNode(path, n, v.Elem())
	case reflect.Interface:
		if x := d.anyValue(path, n); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.String:
		if s, _, ok := d.scalar(path, n, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, tag, ok := d.scalar(path, n, "true or false")
		if !ok {
			return
		}
		if tag != "!!bool" {
			d.errorf(path, n, "want true or false, got %s", describe(n, s))
			return
		}
		v.SetBool(strings.EqualFold(s, "true"))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, tag, ok := d.scalar(path, n, "an integer")
		if !ok {
			return
		}
		var i int64
		if tag != "!!int" {
			d.errorf(path, n, "want an integer, got %s", describe(n, s))
		} else if err := (&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}).Decode(&i); err != nil || v.OverflowInt(i) {
			d.errorf(path, n, "integer %s is out of range", s)
		} else {
			v.SetInt(i)
		}
	case reflect.Float64:
		s, tag, ok := d.scalar(path, n, "a number")
		if !ok {
			return
		}
		var f float64
		if tag != "!!float" && tag != "!!int" {
			d.errorf(path, n, "want a number, got %s", describe(n, s))
		} else if err := (&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}).Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			d.errorf(path, n, "want a finite number, got %s", s)
		} else {
			v.SetFloat(f)
		}
	default:
		panic("config: cannot decode into " + v.Type().String())
	}
}

// scalar returns the value of the scalar n after ${VAR} expansion, and its
// tag. When the value was a plain scalar that used ${VAR}, the tag is
// resolved again from the expanded text, so a plain ${N} can be an integer
// or a boolean (but never null: an empty value stays a string).
func (d *decoder) scalar(path string, n *yaml.Node, want string) (string, string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(path, n, "want %s, got %s", want, describe(n, ""))
		return "", "", false
	}
	s, used, err := expandEnv(n.Value, d.lookupEnv)
	if err != nil {
		d.errorf(path, n, "%v", err)
		return "", "", false
	}
	tag := n.ShortTag()
	if used {
		d.fromEnv[path] = true
		const explicit = yaml.TaggedStyle | yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
		if n.Style&explicit == 0 {
			tag = (&yaml.Node{Kind: yaml.ScalarNode, Value: s}).ShortTag()
			if tag == "!!null" {
				tag = "!!str"
			}
		}
	}
	return s, tag, true
}

func (d *decoder) duration(path string, n *yaml.Node, v reflect.Value) {
	s, tag, ok := d.scalar(path, n, "a duration")
	if !ok {
		return
	}
	if tag == "!!int" || tag == "!!float" {
		d.errorf(path, n, "duration %s has no unit: write it like 90s, 15m or 24h", s)
		return
	}
	dur, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(path, n, "invalid duration %s: write it like 90s, 15m or 24h", describe(n, s))
	case dur <= 0:
		d.errorf(path, n, "must be > 0, got %s", s)
	default:
		v.SetInt(int64(dur))
	}
}

// messageLimit decodes an integer into a MessageLimit (a null, no limit,
// is handled by decode).
func (d *decoder) messageLimit(path string, n *yaml.Node, v reflect.Value) {
	s, tag, ok := d.scalar(path, n, "an integer, or null for no limit")
	if !ok {
		return
	}
	var i int
	if tag != "!!int" {
		d.errorf(path, n, "want an integer, or null for no limit, got %s", describe(n, s))
	} else if err := (&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s}).Decode(&i); err != nil {
		d.errorf(path, n, "integer %s is out of range", s)
	} else {
		v.Set(reflect.ValueOf(MessageLimit{N: i}))
	}
}

// structure decodes a mapping into a struct, field by yaml tag.
func (d *decoder) structure(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errorf(path, n, "want a mapping, got %s", describe(n, ""))
		return
	}
	names, index := yamlFields(v.Type())
	for _, kv := range d.pairs(path, n) {
		key := kv.key.Value
		kp := keyPath(path, key)
		i, ok := index[key]
		if !ok || kv.key.ShortTag() != "!!str" {
			d.errorf(kp, kv.key, "unknown key%s", suggest(key, names))
			continue
		}
		d.lines[kp] = kv.key.Line
		d.decode(kp, kv.value, v.Field(i))
	}
}

// mapping decodes a mapping with string keys into a Go map.
func (d *decoder) mapping(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errorf(path, n, "want a mapping, got %s", describe(n, ""))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for _, kv := range d.pairs(path, n) {
		key := kv.key.Value
		kp := keyPath(path, key)
		if tag := kv.key.ShortTag(); tag != "!!str" {
			d.errorf(kp, kv.key, "key %s is %s, not a string: quote it", key, tagName(tag))
			continue
		}
		d.lines[kp] = kv.key.Line
		elem := newValue(v.Type().Elem())
		d.decode(kp, kv.value, elem)
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), elem)
	}
}

func (d *decoder) sequence(path string, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.errorf(path, n, "want a sequence, got %s", describe(n, ""))
		return
	}
	s := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		ip := indexPath(path, i)
		d.lines[ip] = item.Line
		elem := newValue(v.Type().Elem())
		d.decode(ip, item, elem)
		s = reflect.Append(s, elem)
	}
	v.Set(s)
}

// anyValue decodes free-form YAML (runner_config) into JSON-compatible
// values: map[string]any, []any, string, bool, int, float64 or nil.
func (d *decoder) anyValue(path string, n *yaml.Node) any {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any)
		d.mapping(path, n, reflect.ValueOf(&m).Elem())
		return m
	case yaml.SequenceNode:
		s := []any{}
		d.sequence(path, n, reflect.ValueOf(&s).Elem())
		return s
	}
	s, tag, ok := d.scalar(path, n, "a value")
	if !ok {
		return nil
	}
	switch tag {
	case "!!str", "!!timestamp", "!!binary":
		return s
	case "!!bool":
		return strings.EqualFold(s, "true")
	case "!!int", "!!float":
		var x any
		if err := (&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}).Decode(&x); err != nil {
			d.errorf(path, n, "invalid number %s", describe(n, s))
			return nil
		}
		if f, ok := x.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			d.errorf(path, n, "%s cannot be represented in JSON", s)
			return nil
		}
		return x
	case "!!null":
		return nil
	}
	d.errorf(path, n, "unsupported tag %s", tag)
	return nil
}

type pair struct{ key, value *yaml.Node }

// pairs returns the key/value pairs of a mapping with merge keys (<<)
// applied: keys set in the mapping win over merged ones, and earlier merged
// mappings win over later ones. It reports duplicate and non-scalar keys.
func (d *decoder) pairs(path string, n *yaml.Node) []pair {
	var own, merged []pair
	seen := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merged = append(merged, d.mergePairs(path, v)...)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(path, k, "a key must be a scalar, got %s", describe(k, ""))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(keyPath(path, k.Value), k, "duplicate key (first set on line %d)", first.Line)
			continue
		}
		seen[k.Value] = k
		own = append(own, pair{k, v})
	}
	for _, kv := range merged {
		if _, dup := seen[kv.key.Value]; !dup {
			seen[kv.key.Value] = kv.key
			own = append(own, kv)
		}
	}
	return own
}

func (d *decoder) mergePairs(path string, v *yaml.Node) []pair {
	v, leave, ok := d.enter(path, v)
	if !ok {
		return nil
	}
	defer leave()
	switch v.Kind {
	case yaml.MappingNode:
		return d.pairs(path, v)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range v.Content {
			out = append(out, d.mergePairs(path, item)...)
		}
		return out
	}
	d.errorf(path, v, "a merge (<<) takes a mapping or a sequence of mappings, got %s", describe(v, ""))
	return nil
}

// newValue returns a settable new value of type t with its defaults.
func newValue(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if dv, ok := p.Interface().(defaulter); ok {
		dv.setDefaults()
	}
	return p.Elem()
}

// yamlFields returns the yaml key names of a struct's fields, in order, and
// the field index of each.
func yamlFields(t reflect.Type) ([]string, map[string]int) {
	var names []string
	index := make(map[string]int)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}

// suggest returns ` (did you mean "x"?)` for the known key closest to key,
// or the list of known keys when none is close.
func suggest(key string, known []string) string {
	if best, ok := closest(key, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	sorted := slices.Sorted(slices.Values(known))
	return " (known keys: " + strings.Join(sorted, ", ") + ")"
}

// closest returns the known name nearest to name in edit distance
// (ignoring case), if it is near enough to be a typo, or else the one known
// name that starts with name ("cert" for "cert_file").
func closest(name string, known []string) (string, bool) {
	if len(name) > 64 {
		return "", false
	}
	lower := strings.ToLower(name)
	best, bestDist := "", math.MaxInt
	var prefixed []string
	for _, k := range known {
		if dist := editDistance(lower, strings.ToLower(k)); dist < bestDist {
			best, bestDist = k, dist
		}
		if len(lower) >= 3 && strings.HasPrefix(strings.ToLower(k), lower) {
			prefixed = append(prefixed, k)
		}
	}
	if best != "" && bestDist <= max(1, len(name)/3) {
		return best, true
	}
	if len(prefixed) == 1 {
		return prefixed[0], true
	}
	return "", false
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent bytes.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// describe names what n is, for "want X, got Y" messages. For a scalar it
// quotes value (or n.Value when value is empty), shortened.
func describe(n *yaml.Node, value string) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	}
	if value == "" {
		value = n.Value
	}
	if len(value) > 40 {
		value = value[:37] + "..."
	}
	return strconv.Quote(value)
}

func tagName(tag string) string {
	switch tag {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	}
	return "tagged " + tag
}
