package httpapi

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docRoute matches a route in docs/http-api.md: a method and a path in
// backquotes, such as `GET /v1/sessions/{id}/messages?before_sequence=`.
var docRoute = regexp.MustCompile("(GET|POST|PUT|DELETE|PATCH) (/[^` ?]*)")

// TestRoutesAreDocumented: every route the server registers is in the
// table of docs/http-api.md's "Routes" section, and the table documents no
// route the server lacks.
func TestRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Routes\n")
	if !ok {
		t.Fatal(`docs/http-api.md has no "## Routes" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		// The first cell names the route (or several, comma-separated).
		cells := strings.Split(line, " | ")
		for _, code := range regexp.MustCompile("`[^`]*`").FindAllString(cells[0], -1) {
			if m := docRoute.FindStringSubmatch(code); m != nil {
				documented[m[1]+" "+m[2]] = true
			}
		}
	}
	s := newTestAPI(t, nil).server
	if len(s.routes) < 10 || len(documented) < 10 {
		t.Fatalf("the server has %d routes and the docs %d; the extraction is broken", len(s.routes), len(documented))
	}
	for _, r := range s.routes {
		if !documented[r] {
			t.Errorf("the server serves %s, but docs/http-api.md's route table lacks it", r)
		}
	}
	var extra []string
	for r := range documented {
		if !slices.Contains(s.routes, r) {
			extra = append(extra, r)
		}
	}
	slices.Sort(extra)
	for _, r := range extra {
		t.Errorf("docs/http-api.md documents %s, which the server does not serve", r)
	}
}
