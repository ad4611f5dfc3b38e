// Package docs holds the tests that keep the manual in step with the
// repository: its relative links and anchors resolve, and it never points
// outside the repository. The other drift tests live beside the code they
// check: config keys in internal/config, HTTP routes in internal/httpapi,
// CLI commands and flags and the README tour in cmd/dex-agent-worker.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// markdownFiles are README.md and every Markdown file under docs/, as
// paths relative to the repository root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, filepath.Join("docs", path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files; the walk is broken", len(files))
	}
	return files
}

// prose returns the lines of a Markdown file with fenced blocks and code
// spans blanked, so that links inside code do not count.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	inBlock := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			lines[i] = ""
			continue
		}
		if inBlock {
			lines[i] = ""
			continue
		}
		lines[i] = codeSpan.ReplaceAllString(l, "code")
	}
	return lines
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	heading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// link matches an inline link or image: [text](target "title").
	link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// anchors returns the anchors GitHub gives the headings of a Markdown
// file: lowercased, punctuation dropped, spaces made hyphens, and -1, -2
// after repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inBlock = !inBlock
			continue
		}
		m := heading.FindStringSubmatch(l)
		if inBlock || m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for title, want := range map[string]string{
		"The local stack: `dev`": "the-local-stack-dev",
		"Past one machine: workers, API processes, Redis and PostgreSQL": "past-one-machine-workers-api-processes-redis-and-postgresql",
		"Steering, cancelling and closing":                               "steering-cancelling-and-closing",
		"`session_settings` (v2)":                                        "session_settings-v2",
	} {
		if got := slug(title); got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestRelativeLinksResolve: every relative link of README.md and docs/
// names a file of the repository, and every #anchor a heading of its file.
func TestRelativeLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	read := func(rel string) (string, bool) {
		if s, ok := texts[rel]; ok {
			return s, true
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", false
		}
		texts[rel] = string(b)
		return string(b), true
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		text, ok := read(file)
		if !ok {
			t.Fatalf("%s: cannot read it", file)
		}
		for i, line := range prose(text) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %s", file, i+1, target)
				path, anchor, _ := strings.Cut(target, "#")
				rel := file
				if path != "" {
					rel = filepath.Clean(filepath.Join(filepath.Dir(file), path))
					if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(path) {
						t.Errorf("%s: points outside the repository", where)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s: %s does not exist", where, rel)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					continue // a line anchor of a source file, say
				}
				linked, _ := read(rel)
				if !anchors(linked)[anchor] {
					t.Errorf("%s: %s has no heading with anchor #%s", where, rel, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d links; the extraction is broken", checked)
	}
}

// outside are words that would point a reader outside the repository: the
// design notes and the reference the project was built from live there.
var outside = regexp.MustCompile(`\.\./shared/|DESIGN\.md|dex-agents-0\.[0-9]\.[0-9]-`)

// TestNothingPointsOutsideTheRepository: no Markdown file, Go file or
// config of the repository names a file outside it.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "node_modules" || name == "bin" || name == ".dex" || name == "dist" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".md", ".go", ".yaml", ".yml", ".ts", ".js", ".proto", ".sh":
		default:
			if name != "Makefile" && name != "Dockerfile" && name != "run" {
				return nil
			}
		}
		if name == "links_test.go" {
			return nil // this file names them to look for them
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, l := range strings.Split(string(b), "\n") {
			if outside.MatchString(l) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: points outside the repository: %s", rel, i+1, strings.TrimSpace(l))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d files; the walk is broken", checked)
	}
}
