package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The docs' commands exist: every `dex-agent-worker ...` command line in
// README.md and docs/*.md, in a code block or an inline code span, names
// commands the CLI has and flags those commands take.

// docCommand is one dex-agent-worker command line found in the docs.
type docCommand struct {
	where string // file:line
	args  []string
}

// inlineCode matches a Markdown code span.
var inlineCode = regexp.MustCompile("`[^`\n]+`")

// docCommands returns the dex-agent-worker command lines of a Markdown
// file: the lines of its fenced blocks and its inline code spans.
func docCommands(t *testing.T, path, name string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docCommand
	add := func(line int, text string) {
		for _, args := range commandsIn(text) {
			out = append(out, docCommand{where: fmt.Sprintf("%s:%d", name, line), args: args})
		}
	}
	inBlock := false
	for i, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inBlock = !inBlock
		case inBlock:
			add(i+1, l)
		default:
			for _, code := range inlineCode.FindAllString(l, -1) {
				add(i+1, strings.Trim(code, "`"))
			}
		}
	}
	return out
}

// commandsIn returns the arguments after each "dex-agent-worker" (or a
// path that ends in it) in a line of shell, up to the end of that simple
// command.
func commandsIn(line string) [][]string {
	words := shellWords(line)
	var out [][]string
	for i, w := range words {
		if w != "dex-agent-worker" && !strings.HasSuffix(w, "/dex-agent-worker") {
			continue
		}
		// Only a word where a command starts runs the CLI ("docker build
		// -t dex-agent-worker" names an image): the line's first word, or
		// one after an operator, an assignment, a prefix command or a
		// label such as "approve:".
		if i > 0 {
			p := words[i-1]
			if p != "|" && p != ";" && p != "&&" && p != "||" && p != "sudo" && p != "exec" && p != "time" &&
				!strings.HasSuffix(p, "=") && !strings.HasSuffix(p, ":") {
				continue
			}
		}
		var args []string
		for _, a := range words[i+1:] {
			if a == "|" || a == ";" || a == "&&" || a == "||" || a == "&" || strings.HasPrefix(a, "#") ||
				strings.HasPrefix(a, ">") || strings.HasPrefix(a, "<") || strings.HasPrefix(a, "2>") {
				break
			}
			args = append(args, a)
		}
		out = append(out, args)
	}
	return out
}

// shellWords splits a line the way a shell would, well enough for docs:
// quotes group words, and the usage brackets and parentheses of the
// docs' synopses ([--flag], (A | B)) and $( ) are dropped.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '[' || r == ']' || r == '(' || r == ')' || r == '$' && cur.Len() == 0:
			flush()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return words
}

// checkCommand returns what is wrong with a command line of the docs, or "".
func checkCommand(root *cobra.Command, args []string) string {
	cmd, rest, err := root.Find(args)
	if err != nil {
		// A placeholder such as COMMAND stands for any command.
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				if a == strings.ToUpper(a) {
					return ""
				}
				break
			}
		}
		return err.Error()
	}
	if cmd.HasSubCommands() {
		for _, a := range rest {
			if strings.HasPrefix(a, "-") {
				break
			}
			// A placeholder such as COMMAND stands for any command.
			if a == strings.ToUpper(a) {
				return ""
			}
			return fmt.Sprintf("%q is not a command of %q", a, cmd.CommandPath())
		}
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" || strings.HasPrefix(a, "-$") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		name = strings.TrimRight(name, ",.|:")
		if name == "" {
			continue
		}
		var f *pflag.Flag
		if strings.HasPrefix(a, "--") {
			f = cmd.Flags().Lookup(name)
			if f == nil {
				f = cmd.InheritedFlags().Lookup(name)
			}
		} else if len(name) == 1 {
			f = cmd.Flags().ShorthandLookup(name)
			if f == nil {
				f = cmd.InheritedFlags().ShorthandLookup(name)
			}
		} else {
			continue // not a flag: a negative number, say
		}
		if f == nil && name != "help" && name != "h" {
			return fmt.Sprintf("%q has no flag %s", cmd.CommandPath(), a)
		}
	}
	return ""
}

func TestDocsCommandsExist(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	root := newRootCmd(&globals{})
	checked := 0
	for _, path := range files {
		name, _ := filepath.Rel(filepath.Join("..", ".."), path)
		for _, c := range docCommands(t, path, name) {
			checked++
			if problem := checkCommand(root, c.args); problem != "" {
				t.Errorf("%s: dex-agent-worker %s: %s", c.where, strings.Join(c.args, " "), problem)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d command lines in the docs; the extraction is broken", checked)
	}
}

func TestCheckCommand(t *testing.T) {
	t.Parallel()
	root := newRootCmd(&globals{})
	for _, c := range []struct {
		line string
		ok   bool
	}{
		{`./bin/dex-agent-worker session send --plan $ID "refund orders 2 and 4"`, true},
		{"dex-agent-worker run --config FILE [--role all|worker|api] [--http ADDR]", true},
		{"ID=$(./bin/dex-agent-worker session start --agent orders --message \"refund order 7\")", true},
		{"dex-agent-worker COMMAND --help", true},
		{"dex-agent-worker --log-level debug dev", true},
		{"dex-agent-worker chat --config dex.yaml", false},
		{"dex-agent-worker session frobnicate ID", false},
		{"dex-agent-worker session snapshot ID --jsn", false},
		{"printf 'x\\n' | dex-agent-worker chat --agent orders > out.txt", true},
		{"docker build -t dex-agent-worker .", true},
	} {
		cmds := commandsIn(c.line)
		if len(cmds) == 0 && c.ok {
			continue // not a command of the CLI
		}
		if len(cmds) != 1 {
			t.Errorf("%s: found %d commands", c.line, len(cmds))
			continue
		}
		if problem := checkCommand(root, cmds[0]); (problem == "") != c.ok {
			t.Errorf("%s: problem %q, want ok=%v", c.line, problem, c.ok)
		}
	}
}
