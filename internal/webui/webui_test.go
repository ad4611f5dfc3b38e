package webui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string, header http.Header) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServesPageAndAssets(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		path, contentType, contains, cacheControl string
	}{
		{"/", "text/html; charset=utf-8", `<script src="assets/app.js" defer></script>`, "no-cache"},
		{"/index.html", "text/html; charset=utf-8", `data-testid="message-input"`, "no-cache"},
		{"/assets/app.js", "text/javascript; charset=utf-8", "function readSSE", "no-cache"},
		{"/assets/app.css", "text/css; charset=utf-8", "prefers-color-scheme: dark", "no-cache"},
		{"/assets/icon.svg", "image/svg+xml", "<svg", "no-cache"},
	} {
		r := get(t, h, http.MethodGet, tc.path, nil)
		b := body(t, r)
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET %s: status %d", tc.path, r.StatusCode)
			continue
		}
		if got := r.Header.Get("Content-Type"); got != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.contentType)
		}
		if got := r.Header.Get("Cache-Control"); got != tc.cacheControl {
			t.Errorf("GET %s: Cache-Control %q, want %q", tc.path, got, tc.cacheControl)
		}
		if got := r.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, got)
		}
		if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q", tc.path, got)
		}
		if !strings.Contains(b, tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
	}
}

func TestContentSecurityPolicyAllowsOnlySelf(t *testing.T) {
	csp := ContentSecurityPolicy
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP lacks %q: %s", want, csp)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "data:", "*"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP allows %q: %s", bad, csp)
		}
	}
}

// The page must work offline and under the CSP: nothing from other origins,
// no inline script, style or event handler attributes.
func TestPageIsSelfContained(t *testing.T) {
	h := Handler()
	page := body(t, get(t, h, http.MethodGet, "/", nil))
	for _, re := range []string{`(?i)https?://`, `(?i)<script>`, `(?i)<style`, `(?i)\sstyle=`, `(?i)\son[a-z]+=`} {
		if m := regexp.MustCompile(re).FindString(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")); m != "" {
			t.Errorf("index.html has %q (pattern %s)", m, re)
		}
	}
	js := body(t, get(t, h, http.MethodGet, "/assets/app.js", nil))
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(js, bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
	css := body(t, get(t, h, http.MethodGet, "/assets/app.css", nil))
	if regexp.MustCompile(`(?i)@import|url\(`).MatchString(css) {
		t.Errorf("app.css loads other resources")
	}
}

func TestUnknownPathsAre404(t *testing.T) {
	h := Handler()
	for _, p := range []string{"/assets/", "/assets/nope.js", "/assets/../index.html", "/assets/static/app.js", "/favicon.ico", "/v2/whatever", "/app.js"} {
		r := get(t, h, http.MethodGet, p, nil)
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, r.StatusCode)
		}
		if got := r.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
			t.Errorf("GET %s: no CSP on the 404", p)
		}
	}
}

func TestMethodsAndRevalidation(t *testing.T) {
	h := Handler()
	if r := get(t, h, http.MethodPost, "/", nil); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: status %d", r.StatusCode)
	}
	r := get(t, h, http.MethodHead, "/assets/app.js", nil)
	if r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD: status %d", r.StatusCode)
	}
	etag := r.Header.Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	r = get(t, h, http.MethodGet, "/assets/app.js", http.Header{"If-None-Match": {etag}})
	if r.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", r.StatusCode)
	}
}

// A function declared twice in the page's script is a silent bug: the
// later declaration replaces the earlier one everywhere in its scope (the
// report view's helper once broke every list of the page this way).
func TestAppJSDeclaresEachFunctionOnce(t *testing.T) {
	b, err := fs.ReadFile(static, "static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^(\s*)(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(`)
	seen := map[string]int{}
	for i, m := range decl.FindAllSubmatch(b, -1) {
		key := string(m[1]) + string(m[2]) // same indentation: the same scope, in this file's style
		if first, ok := seen[key]; ok {
			t.Errorf("app.js declares function %s twice at the same depth (declarations %d and %d)", m[2], first+1, i+1)
		}
		seen[key] = i
	}
	if len(seen) < 50 {
		t.Fatalf("found %d function declarations in app.js; the pattern is broken", len(seen))
	}
}
