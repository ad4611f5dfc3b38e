package session

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/events"
)

// The wire vocabulary that clients, browsers and other languages see, as
// golden JSON: every event type's payload, the event envelopes, the
// snapshot and its records, and every update's and query's request and
// result. Each type is written twice: with every field set (the names and
// shapes of all its fields) and at its zero value (which fields are always
// present). A change of a JSON name, a type or an omitempty shows as a diff
// here, so moving these types between packages cannot change the wire by
// one byte unnoticed. Rewrite the files with -update-wire after a change
// the wire is meant to get.

var updateWire = flag.Bool("update-wire", false, "rewrite testdata/wire from the current types")

// wireEvents are the payload types of every event the worker writes, by
// event type.
func wireEvents() map[string]any {
	out := map[string]any{
		wire.EventTurnRecovering:    wire.TurnRecoveringPayload{},
		wire.EventMCPTaskStatus:     wire.MCPTaskStatusPayload{},
		wire.EventMCPToolProgress:   wire.MCPToolProgressPayload{},
		wire.EventSpendLimitReached: wire.SpendLimitReachedPayload{},
		wire.EventInterruptExpiring: wire.InterruptExpiringPayload{},
		wire.EventInterruptExtended: wire.InterruptExtendedPayload{},
	}
	for name, payload := range eventPayloads {
		out[wireNames[name]] = payload
	}
	return out
}

// wireTypes are the other types of the wire, by a name for their file.
var wireTypes = map[string]any{
	"envelope.events.Event":  events.Event{},
	"envelope.session.Event": Event{},

	"snapshot.Snapshot":       wire.Snapshot{},
	"snapshot.SessionsPage":   wire.SessionsPage{},
	"snapshot.MessagesPage":   wire.MessagesPage{},
	"snapshot.SpendRefusal":   wire.SpendRefusal{},
	"snapshot.ContextSummary": wire.ContextSummary{},

	"update.StartInput":                   wire.StartInput{},
	"update.SendUserMessageRequest":       wire.SendUserMessageRequest{},
	"update.SteerUserMessageRequest":      wire.SteerUserMessageRequest{},
	"update.DeleteQueuedMessageRequest":   wire.DeleteQueuedMessageRequest{},
	"update.CancelTurnRequest":            wire.CancelTurnRequest{},
	"update.CloseSessionRequest":          wire.CloseSessionRequest{},
	"update.ExecutePlanRequest":           wire.ExecutePlanRequest{},
	"update.ResolveInterruptRequest":      wire.ResolveInterruptRequest{},
	"update.ExtendInterruptRequest":       wire.ExtendInterruptRequest{},
	"update.ExtendInterruptResult":        wire.ExtendInterruptResult{},
	"update.AnswerQuestionRequest":        wire.AnswerQuestionRequest{},
	"update.UpdateSessionSettingsRequest": wire.UpdateSessionSettingsRequest{},
	"query.ListMessagesRequest":           wire.ListMessagesRequest{},
	"query.ForkPointRequest":              wire.ForkPointRequest{},
	"query.ForkPoint":                     wire.ForkPoint{},
}

// filled returns a value of v's type with every field set, each to a
// value that names the field, so the golden file shows where each lands.
func filled(v any) any {
	p := reflect.New(reflect.TypeOf(v))
	fill(p.Elem(), "v", 0)
	return p.Elem().Interface()
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func fill(v reflect.Value, name string, depth int) {
	if depth > 8 {
		return // a recursive type: leave the deeper levels zero
	}
	if v.Type() == rawMessageType {
		v.SetBytes([]byte(`{"` + name + `":1}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(name)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(name)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(len(name)) + 0.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name+"[0]", depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), fmt.Sprintf("%s[%d]", name, i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, name+".key", depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, name+".value", depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			fill(v.Field(i), f.Name, depth+1)
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf(name))
	}
}

// wireJSON is v as the worker writes it: JSON without HTML escaping,
// indented here for reading.
func wireJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	return b.String()
}

func TestWireGolden(t *testing.T) {
	all := map[string]any{}
	for typ, payload := range wireEvents() {
		if typ == "" {
			t.Fatalf("an event payload %T has no wire name", payload)
		}
		all["event."+typ] = payload
	}
	for name, v := range wireTypes {
		all[name] = v
	}
	dir := filepath.Join("testdata", "wire")
	if *updateWire {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := all[name]
		// The header names no Go type: the types may move between
		// packages, and the file stays the same.
		got := "// every field set\n" + wireJSON(t, filled(v)) + "// zero value\n" + wireJSON(t, v)
		path := filepath.Join(dir, name+".json")
		if *updateWire {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v (run the test with -update-wire to write it)", name, err)
			continue
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("the wire JSON of %s changed (-golden +now):\n%s", name, diff)
		}
	}
	// A golden file whose type is gone is a wire change too.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".json"); !slices.Contains(names, name) {
			t.Errorf("testdata/wire/%s has no type any more", e.Name())
		}
	}
	if len(names) < 40 {
		t.Fatalf("%d wire types; the list is broken", len(names))
	}
}
