// Package webui is the web chat page that the HTTP API server serves at /:
// a static, dependency-free page (HTML, CSS and JavaScript embedded in the
// binary, no build step, nothing loaded from other origins) that talks to the
// API of internal/httpapi with the bearer token the user gives it.
//
// Routes of Handler:
//
//	GET /                  the page (also /index.html)
//	GET /assets/<file>     its script, style sheet and icon
//
// Every other path answers 404. Every answer carries a strict
// Content-Security-Policy that allows only the page's own origin.
package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// ContentSecurityPolicy is sent with every answer of Handler: scripts,
// styles, images and connections only from the page's own origin; no
// inline script or style, no plugins, no framing, no foreign form targets.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'"

type asset struct {
	body        []byte
	contentType string
	etag        string
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// load reads the embedded files once.
func load() (index asset, assets map[string]asset) {
	assets = map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := asset{body: body, contentType: contentTypes[path.Ext(p)], etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if a.contentType == "" {
			a.contentType = "application/octet-stream"
		}
		name := strings.TrimPrefix(p, "static/")
		if name == "index.html" {
			index = a
		} else {
			assets[name] = a
		}
		return nil
	})
	if err != nil || index.body == nil {
		panic("webui: embedded files missing")
	}
	return index, assets
}

// Handler serves the chat page and its assets. Mount it at / of the API
// server, after the API routes.
func Handler() http.Handler {
	index, assets := load()
	modTime := time.Time{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")

		var a asset
		switch p := r.URL.Path; {
		case p == "/" || p == "/index.html":
			a = index
		case strings.HasPrefix(p, "/assets/"):
			var ok bool
			a, ok = assets[strings.TrimPrefix(p, "/assets/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		// The file names carry no version, so every load revalidates; the
		// ETag makes that a 304 when nothing changed.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, "", modTime, bytes.NewReader(a.body))
	})
}
