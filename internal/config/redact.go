package config

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var secretType = reflect.TypeFor[Secret]()

// Redacted returns the resolved configuration as YAML, with defaults filled
// in, durations written like 15m, and secrets shown as <secret>. Apart from
// the hidden values it loads back to the same configuration. Values that
// reach plugins as free-form data (plugin args and runner_config) are also
// shown as <secret> when they came from ${VAR}, since the environment is
// where secrets come from. Use it to log or print the configuration.
func (c *Config) Redacted() ([]byte, error) {
	e := encoder{fromEnv: c.fromEnv}
	n := e.encode("", reflect.ValueOf(c).Elem(), false)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return buf.Bytes(), nil
}

// encoder builds a YAML node tree from the Config struct by its yaml tags,
// the reverse of decoder.
type encoder struct {
	fromEnv map[string]bool
}

// encode returns the node for v at path. hideEnv is set under fields tagged
// redact:"env".
func (e *encoder) encode(path string, v reflect.Value, hideEnv bool) *yaml.Node {
	if hideEnv && e.fromEnv[path] {
		return str(redacted)
	}
	if v.Type() == durationType {
		return scalar("!!str", formatDuration(time.Duration(v.Int())))
	}
	if v.Type() == secretType {
		return str(v.Interface().(Secret).String())
	}
	if v.Type() == messageLimitType {
		if l := v.Interface().(MessageLimit); !l.Unlimited {
			return scalar("!!int", strconv.Itoa(l.N))
		}
		return scalar("!!null", "null")
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return scalar("!!null", "null")
		}
		return e.encode(path, v.Elem(), hideEnv)
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || (opts == "omitempty" && isEmpty(v.Field(i))) {
				continue
			}
			kp := keyPath(path, name)
			n.Content = append(n.Content, str(name), e.encode(kp, v.Field(i), hideEnv || f.Tag.Get("redact") == "env"))
		}
		return n
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		for _, k := range keys {
			val := v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
			n.Content = append(n.Content, str(k), e.encode(keyPath(path, k), val, hideEnv))
		}
		return n
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if v.Type().Elem().Kind() == reflect.String {
			n.Style = yaml.FlowStyle
		}
		for i := range v.Len() {
			n.Content = append(n.Content, e.encode(indexPath(path, i), v.Index(i), hideEnv))
		}
		return n
	case reflect.String:
		return str(escapeDollars(v.String()))
	case reflect.Bool:
		return scalar("!!bool", strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return scalar("!!int", strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return scalar("!!int", strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := strconv.FormatFloat(v.Float(), 'g', -1, 64)
		if !strings.ContainsAny(f, ".eIN") {
			f += ".0" // stays a float when loaded again
		}
		return scalar("!!float", f)
	}
	// Values set by hand to a type that YAML cannot show.
	return str(fmt.Sprint(v.Interface()))
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	}
	return v.IsZero()
}

// str returns a string node. Invalid UTF-8, which YAML cannot hold, is
// shown with replacement characters.
func str(s string) *yaml.Node { return scalar("!!str", strings.ToValidUTF8(s, "\uFFFD")) }

// escapeDollars doubles every $ of a value that Load would otherwise expand
// or unescape, so the output loads back to the same value.
func escapeDollars(s string) string {
	if strings.Contains(s, "${") || strings.Contains(s, "$$") {
		return strings.ReplaceAll(s, "$", "$$")
	}
	return s
}

func scalar(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// formatDuration writes d like time.Duration.String without zero trailing
// units: 15m rather than 15m0s, 24h rather than 24h0m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
