package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/evals"
	"github.com/dex-agents/dex-agent-worker/internal/redact"
	"github.com/dex-agents/dex-agent-worker/internal/sessionquery"
)

func newEvalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Turn recorded sessions into evaluation cases",
		Long: "eval captures recorded sessions as portable cases (versioned JSON Lines, see docs/evals.md):\n" +
			"the user's messages, the tool calls with their arguments and results, the approvals and answers\n" +
			"people gave, and each turn's answer, usage and cost.",
	}
	cmd.AddCommand(newEvalCaptureCmd(g))
	return cmd
}

func newEvalCaptureCmd(g *globals) *cobra.Command {
	f := &sessionFlags{}
	var ids []string
	var query, out string
	var limit int
	cmd := &cobra.Command{
		Use:   "capture (--sessions ID,... | --query 'agent=NAME status=all since=7d' [--limit N]) --out DIR",
		Short: "Write sessions as evaluation cases",
		Long: "capture reads each session's recorded history from Temporal (every run of it) and writes it as a\n" +
			"case, DIR/<session>.jsonl. --query lists sessions by agent=NAME (repeatable),\n" +
			"status=running|closed|all (default all) and since=DURATION (7d, 12h), newest first, up to --limit.\n" +
			"Texts the history holds only the beginning of (long messages, arguments, outputs) are read from\n" +
			"the message store of --config (else dev's); a text it cannot read stays cut and is marked\n" +
			"truncated. Every secret the config knows of (the values of the variables it names) is redacted.",
		Example: "  dex-agent-worker eval capture --config worker.yaml --sessions session-3f2a,session-9c1d --out evals/orders\n" +
			"  dex-agent-worker eval capture --config worker.yaml --query 'agent=orders status=all since=7d' --out evals/orders",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if (len(ids) == 0) == (query == "") {
				return errors.New("give --sessions ID,... or --query FILTER (one of them)")
			}
			if out == "" {
				return errors.New("--out DIR is required: where the cases are written")
			}
			if limit < 1 {
				return fmt.Errorf("--limit %d: want at least 1", limit)
			}
			cfg, err := f.configFile()
			if err != nil {
				return err
			}
			agents := map[string]string{} // name -> flow type
			names := map[string]string{}  // flow type -> name
			redactor := func(s string) string { return s }
			if cfg != nil {
				for _, a := range cfg.Agents {
					agents[a.Name], names[a.FlowType] = a.FlowType, a.Name
				}
				redactor = redact.New(cfg.SecretValues()...).String
			}
			t, err := f.temporal()
			if err != nil {
				return err
			}
			c, err := daemon.Dial(ctx, t, "", slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err != nil {
				return fmt.Errorf("%w (is the engine running? set --address or DEX_TEMPORAL_ADDRESS)", err)
			}
			defer c.Close()
			if query != "" {
				if cfg == nil {
					return errors.New("--query needs --config FILE (or $DEX_CONFIG): it maps agent names to flow types")
				}
				filter, err := sessionquery.Parse(query, sessionquery.StatusAll, agents)
				if err != nil {
					return fmt.Errorf("--query: %w", err)
				}
				if ids, err = evals.ListSessions(ctx, c, t.Namespace, filter.Visibility(time.Now(), false), limit); err != nil {
					return err
				}
				if len(ids) == 0 {
					return fmt.Errorf("--query %q lists no session", query)
				}
			}
			var texts evals.Texts
			if st, err := f.messageStore(ctx); err != nil {
				fmt.Fprintf(g.stderr, "warning: without the message store, long texts stay cut (marked truncated): %v\n", err)
			} else if st != nil {
				defer st.Close()
				texts = evals.StoreTexts{Store: st}
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			for _, id := range ids {
				s, err := evals.FetchSession(ctx, c, id)
				if err != nil {
					return err
				}
				s.Agent = names[s.FlowType]
				if s.Agent == "" {
					s.Agent = s.FlowType
				}
				cs, err := evals.Decode(ctx, s, texts, time.Now())
				if err != nil {
					return err
				}
				cs.Redact(redactor)
				path := filepath.Join(out, id+".jsonl")
				if err := writeCase(path, cs); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "%s: %s -> %s\n", id, describeCase(cs), path)
			}
			return nil
		},
	}
	f.addFlags(cmd.Flags())
	cmd.Flags().StringSliceVar(&ids, "sessions", nil, "session IDs, comma-separated")
	cmd.Flags().StringVar(&query, "query", "", "list the sessions: agent=NAME status=running|closed|all since=7d")
	cmd.Flags().IntVar(&limit, "limit", 100, "with --query: at most this many sessions, newest first")
	cmd.Flags().StringVar(&out, "out", "", "directory the cases are written to (<session>.jsonl)")
	return cmd
}

func writeCase(path string, c *evals.Case) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".case-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := c.Write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// describeCase counts what a case holds, for the command's output.
func describeCase(c *evals.Case) string {
	n := map[string]int{}
	truncated := 0
	for _, r := range c.Records {
		n[r.Type]++
		if r.Truncated {
			truncated++
		}
	}
	parts := []string{
		fmt.Sprintf("%d user message(s)", n[evals.TypeUserMessage]),
		fmt.Sprintf("%d tool call(s)", n[evals.TypeToolCall]),
		fmt.Sprintf("%d approval(s)", n[evals.TypeApproval]),
		fmt.Sprintf("%d question(s)", n[evals.TypeQuestion]),
		fmt.Sprintf("%d turn(s)", n[evals.TypeTurn]),
	}
	if truncated > 0 {
		parts = append(parts, fmt.Sprintf("%d text(s) cut", truncated))
	}
	return strings.Join(parts, ", ")
}
