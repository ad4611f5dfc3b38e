package webui

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/wire"
)

var updateEventsJS = flag.Bool("update-events-js", false, "rewrite static/events.js from package wire")

// eventsJS is static/events.js: the page's names of the worker's event
// types, made from wire.EventTypes, so the page never spells one itself.
func eventsJS() string {
	var b strings.Builder
	b.WriteString("// Code generated from package wire by TestEventsJS (go test ./internal/webui -run TestEventsJS -args -update-events-js). DO NOT EDIT.\n")
	b.WriteString("// The live event types of the worker, by a name in capitals: DEX_EVENTS.TURN_STARTED is 'turn_started'.\n")
	b.WriteString("'use strict';\n\n")
	b.WriteString("const DEX_EVENTS = Object.freeze({\n")
	for _, typ := range wire.EventTypes {
		name := strings.ToUpper(strings.NewReplacer(".", "_").Replace(typ))
		b.WriteString("  " + name + ": '" + typ + "',\n")
	}
	b.WriteString("});\n\n")
	b.WriteString("// The change feed's own types (GET /v1/sessions/changes); its other changes are event types.\n")
	b.WriteString("const DEX_CHANGES = Object.freeze({\n")
	for _, typ := range wire.ChangeTypes {
		b.WriteString("  " + strings.ToUpper(typ) + ": '" + typ + "',\n")
	}
	b.WriteString("});\n")
	return b.String()
}

// TestEventsJS keeps static/events.js the one the event types make.
func TestEventsJS(t *testing.T) {
	const path = "static/events.js"
	if *updateEventsJS {
		if err := os.WriteFile(path, []byte(eventsJS()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(eventsJS(), string(got)); diff != "" {
		t.Errorf("%s is not what package wire makes (-want +file); run go test ./internal/webui -run TestEventsJS -args -update-events-js:\n%s", path, diff)
	}
	page, err := os.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(page), `src="assets/events.js"`), strings.Index(string(page), `src="assets/app.js"`); i < 0 || j < 0 || i > j {
		t.Error("index.html must load assets/events.js before assets/app.js")
	}
}

// TestAppUsesTheEventNames: app.js spells no event type of the worker as
// a string; it reads them from DEX_EVENTS.
func TestAppUsesTheEventNames(t *testing.T) {
	app, err := os.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(app), "\n")
	for _, typ := range append(slices.Clone(wire.EventTypes), wire.ChangeTypes...) {
		for i, l := range lines {
			if strings.Contains(l, "case '"+typ+"'") || strings.Contains(l, "type === '"+typ+"'") || strings.Contains(l, "kind === '"+typ+"'") {
				t.Errorf("static/app.js:%d spells the event type %q; use DEX_EVENTS", i+1, typ)
			}
		}
	}
	if !strings.Contains(string(app), "DEX_EVENTS.TURN_STARTED") {
		t.Error("app.js does not use DEX_EVENTS")
	}
}
