package wire

import (
	"go/build"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

func TestEventTypesHaveOnePayloadEach(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range EventTypes {
		if seen[typ] {
			t.Errorf("%s is listed twice", typ)
		}
		seen[typ] = true
		p := NewPayload(typ)
		if p == nil || reflect.TypeOf(p).Kind() != reflect.Pointer || reflect.TypeOf(p).Elem().Kind() != reflect.Struct {
			t.Errorf("NewPayload(%q) = %T, want a pointer to a struct", typ, p)
		}
	}
	if NewPayload("my_runner_event") != nil {
		t.Error("NewPayload of a runner's own event type is not nil")
	}
	if len(EventTypes) != 28 {
		t.Errorf("%d event types; a new one needs a payload struct, NewPayload and the golden files", len(EventTypes))
	}
}

// TestStandardLibraryOnly: every program may import wire.
func TestStandardLibraryOnly(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("wire imports %s, outside the standard library", imp)
		}
	}
	if !slices.Contains(EventTypes, EventTurnStarted) {
		t.Fatal("EventTypes lacks turn_started")
	}
}

// TestRunnersMayWriteOnlyTheirEvents: a runner may write the four
// standard types runners write; the plugin SDK refuses every other event
// type of the worker, so no runner writes an event the worker owns.
func TestRunnersMayWriteOnlyTheirEvents(t *testing.T) {
	for _, typ := range EventTypes {
		err := pluginapi.CheckEvent(typ, []byte(`{"text":"x","tool_call_id":"c","tool_name":"t","status":"succeeded"}`))
		if slices.Contains(pluginapi.RunnerEventTypes, typ) {
			if typ != EventToolCallStarted && err != nil {
				t.Errorf("pluginapi refuses %s, which runners write: %v", typ, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("pluginapi lets a runner write %s, which only the worker writes", typ)
		}
	}
	for _, typ := range pluginapi.RunnerEventTypes {
		if !slices.Contains(EventTypes, typ) {
			t.Errorf("runners write %s, which wire.EventTypes lacks", typ)
		}
	}
}

// TestEventsAreDocumented: docs/events.md's table lists every event type
// with its payload's fields, a "?" after the ones that may be left out
// (omitempty), and no other type or field.
func TestEventsAreDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_.]+)` \\| ([^|]*) \\|")
	field := regexp.MustCompile("`([a-z_]+)`(\\??)")
	_, section, ok := strings.Cut(string(data), "\n## Event types\n")
	if !ok {
		t.Fatal(`docs/events.md has no "## Event types" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]map[string]bool{} // type -> field -> optional
	for _, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := map[string]bool{}
		for _, f := range field.FindAllStringSubmatch(m[2], -1) {
			fields[f[1]] = f[2] == "?"
		}
		documented[m[1]] = fields
	}
	for _, typ := range EventTypes {
		fields, ok := documented[typ]
		if !ok {
			t.Errorf("docs/events.md has no row for %s", typ)
			continue
		}
		st := reflect.TypeOf(NewPayload(typ)).Elem()
		have := map[string]bool{}
		for i := range st.NumField() {
			name, opts, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			optional := strings.Contains(opts, "omitempty")
			have[name] = true
			doc, ok := fields[name]
			switch {
			case !ok:
				t.Errorf("docs/events.md: %s lacks the field %s", typ, name)
			case doc != optional:
				t.Errorf("docs/events.md: %s's field %s has \"?\" %v, but omitempty is %v", typ, name, doc, optional)
			}
		}
		for name := range fields {
			if !have[name] {
				t.Errorf("docs/events.md: %s documents a field %s its payload lacks", typ, name)
			}
		}
		delete(documented, typ)
	}
	for typ := range documented {
		t.Errorf("docs/events.md documents an event type %s the worker does not write", typ)
	}
}
