package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// docs/configuration.md documents every key the config accepts, and no
// other: the key paths of its YAML blocks are compared with the paths of
// Config's YAML fields, both ways. A path names list items with "[]" and
// the entries of a map keyed by the user's names (plugins, tools, queues,
// servers, models) with "*", as in agents[].tool_policies.*.effect.

// opaqueKeys hold values the worker does not read key by key: a runner's
// own config, and maps of HTTP headers.
var opaqueKeys = map[string]bool{
	"agents[].runner_config":       true,
	"mcp_servers.*.headers":        true,
	"agents[].spend_limit.headers": true,
}

// leafType reports types that a key holds as one value, whatever their Go
// shape.
func leafType(t reflect.Type) bool {
	return t == reflect.TypeFor[time.Duration]() || t == reflect.TypeFor[MessageLimit]()
}

// acceptedKeys adds to out the key paths under prefix that a value of type
// t accepts.
func acceptedKeys(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if leafType(t) || opaqueKeys[prefix] {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			p := join(prefix, tag)
			out[p] = true
			acceptedKeys(t.Field(i).Type, p, out)
		}
	case reflect.Map:
		acceptedKeys(t.Elem(), prefix+".*", out)
	case reflect.Slice:
		acceptedKeys(t.Elem(), prefix+"[]", out)
	}
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// fieldType is the type of the field of struct type t that YAML key k
// names, or nil.
func fieldType(t reflect.Type, k string) reflect.Type {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag == k {
			return t.Field(i).Type
		}
	}
	return nil
}

// documentedKeys adds to out the key paths of node n, read as a value of
// type t, with the line of each key's first appearance.
func documentedKeys(n *yaml.Node, prefix string, t reflect.Type, out map[string]int) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if opaqueKeys[prefix] || (t != nil && leafType(t)) {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			documentedKeys(c, prefix, t, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case t != nil && t.Kind() == reflect.Map:
				documentedKeys(v, prefix+".*", t.Elem(), out)
			default:
				p := join(prefix, k.Value)
				if _, seen := out[p]; !seen {
					out[p] = k.Line
				}
				var ft reflect.Type
				if t != nil && t.Kind() == reflect.Struct {
					ft = fieldType(t, k.Value)
				}
				documentedKeys(v, p, ft, out)
			}
		}
	case yaml.SequenceNode:
		var et reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			et = t.Elem()
		}
		for _, c := range n.Content {
			documentedKeys(c, prefix+"[]", et, out)
		}
	}
}

func TestConfigurationDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	accepted := map[string]bool{}
	acceptedKeys(reflect.TypeFor[Config](), "", accepted)
	documented := map[string]int{} // path -> line in the block
	blocks := 0
	for _, b := range markdownBlocks(t, "../../docs/configuration.md", "yaml") {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(b.text), &n); err != nil {
			t.Errorf("docs/configuration.md:%d: %v", b.line, err)
			continue
		}
		keys := map[string]int{}
		documentedKeys(&n, "", reflect.TypeFor[Config](), keys)
		for k, line := range keys {
			if _, seen := documented[k]; !seen {
				documented[k] = b.line + line
			}
		}
		blocks++
	}
	if len(accepted) < 100 || blocks < 5 {
		t.Fatalf("found %d accepted keys and %d YAML blocks; the extraction is broken", len(accepted), blocks)
	}
	var undocumented, unknown []string
	for k := range accepted {
		if _, ok := documented[k]; !ok {
			undocumented = append(undocumented, k)
		}
	}
	for k, line := range documented {
		if !accepted[k] {
			unknown = append(unknown, k+" (docs/configuration.md:"+strconv.Itoa(line)+")")
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unknown)
	for _, k := range undocumented {
		t.Errorf("the config accepts %s, but docs/configuration.md does not document it in a yaml block", k)
	}
	for _, k := range unknown {
		t.Errorf("docs/configuration.md documents %s, which the config does not accept", k)
	}
}
