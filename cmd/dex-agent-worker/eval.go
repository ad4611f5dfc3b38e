package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/evalrun"
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
	cmd.AddCommand(newEvalCaptureCmd(g), newEvalRunCmd(g))
	return cmd
}

func newEvalRunCmd(g *globals) *cobra.Command {
	var dataset, cfgPath, agent, out, failOn, dataDir, cacheDir, address, namespace string
	var liveReads bool
	var caseTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "run --dataset DIR --config FILE --agent NAME [--out report.json] [--fail-on 'writes_added>0,cost_ratio>1.2']",
		Short: "Replay captured cases against a changed agent and compare",
		Long: "run replays each case of the dataset as a fresh session of the agent in --config (the changed one), on\n" +
			"an embedded engine, and compares it with the record. The recorded user messages are sent in order.\n" +
			"Tool calls are served from the record and never run: a call with the same tool and arguments (JSON\n" +
			"compared with keys sorted, whitespace ignored and numbers by value) gets the recorded result; a read\n" +
			"the record lacks runs only with --live-reads; any other call it lacks gets a tool error, is never\n" +
			"run, and marks the case diverged. Approvals and questions get the recorded answers; one the record\n" +
			"lacks is rejected or declined, and reported. Model calls go to the changed agent's model. Nothing\n" +
			"else reaches outside: no HTTP API, no notifications.\n\n" +
			"The report (--out, JSON, and a Markdown summary beside it, also printed) compares the tool calls,\n" +
			"the approvals asked, the rule decisions, the answers (exact, and a similarity from 0 to 1), turns,\n" +
			"tokens, cost and Step time, per case and in total. --fail-on checks metrics (" + strings.Join(evals.MetricNames, ", ") + ")\n" +
			"and exits 1 when one holds.",
		Example: "  dex-agent-worker eval run --dataset evals/orders --config configs/dev.yaml --agent orders --out report.json\n" +
			"  dex-agent-worker eval run --dataset evals/orders --config new.yaml --agent orders --fail-on 'writes_added>0,cost_ratio>1.2'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataset == "" || cfgPath == "" || agent == "" {
				return errors.New("give --dataset DIR, --config FILE and --agent NAME")
			}
			if strings.EqualFold(filepath.Ext(out), ".md") {
				return fmt.Errorf("--out %s: name the JSON report (such as report.json); its Markdown summary is written beside it", out)
			}
			checks, err := evals.ParseChecks(failOn)
			if err != nil {
				return fmt.Errorf("--fail-on: %w", err)
			}
			cases, err := evals.ReadDataset(dataset)
			if err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			if _, ok := cfg.Agent(agent); !ok {
				return fmt.Errorf("--agent %s: the config has no such agent", agent)
			}
			if dataDir == "" {
				if dataDir, err = os.MkdirTemp("", "dex-eval-"); err != nil {
					return err
				}
				defer os.RemoveAll(dataDir)
			}
			logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			var cache *evals.ModelCache
			if cacheDir != "" {
				cache = &evals.ModelCache{Dir: cacheDir}
			}
			reports, err := evalrun.Run(cmd.Context(), evalrun.RunOptions{Config: cfg, Agent: agent, LiveReads: liveReads,
				DataDir: dataDir, CaseTimeout: caseTimeout, Logger: logger, ModelCache: cache, Address: address, Namespace: namespace}, cases)
			if err != nil {
				return err
			}
			rep := evals.NewReport(dataset, agent, cfgPath, reports, checks)
			if cache != nil {
				hits, misses, err := cache.Stats()
				if err != nil {
					return err
				}
				rep.ModelCache = &evals.CacheStats{Dir: cacheDir, Hits: hits, Misses: misses}
			}
			if out != "" {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
					return err
				}
				md, err := os.Create(strings.TrimSuffix(out, filepath.Ext(out)) + ".md")
				if err != nil {
					return err
				}
				if err := rep.WriteMarkdown(md); err != nil {
					md.Close()
					return err
				}
				if err := md.Close(); err != nil {
					return err
				}
			}
			if err := rep.WriteMarkdown(g.stdout); err != nil {
				return err
			}
			if !rep.Passed {
				return exitError{1} // the report names the failed checks
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dataset, "dataset", "", "directory of cases (*.jsonl), as eval capture writes them")
	cmd.Flags().StringVar(&cfgPath, "config", "", "the worker config of the changed agent")
	cmd.Flags().StringVar(&agent, "agent", "", "the agent that replays every case")
	cmd.Flags().StringVar(&out, "out", "", "write the report as JSON here, and its Markdown summary beside it (.md)")
	cmd.Flags().StringVar(&failOn, "fail-on", "", "checks that fail the run (exit 1), comma-separated, such as 'writes_added>0,cost_ratio>1.2'")
	cmd.Flags().BoolVar(&liveReads, "live-reads", false, "run the reads the record lacks (writes it lacks never run)")
	cmd.Flags().DurationVar(&caseTimeout, "case-timeout", 5*time.Minute, "longest replay of one case")
	cmd.Flags().StringVar(&cacheDir, "model-cache", "", "keep the model's answers in DIR and answer a call asked before from it: a re-run is deterministic and makes no model call it made before")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where the embedded engine keeps its files (default: a temporary directory, deleted after)")
	cmd.Flags().StringVar(&address, "address", "", "replay on this Temporal frontend instead of an embedded engine (with the config's temporal TLS and API key),\n"+
		"on a task queue of the replay's own, so the deployment's workers never take the replays")
	cmd.Flags().StringVar(&namespace, "namespace", "", "with --address: the namespace (default the config's)")
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
				redactor = redact.New(secretForms(cfg.SecretValues())...).String
			} else {
				fmt.Fprintln(g.stderr, "warning: without --config (or $DEX_CONFIG), capture knows no secret, so it redacts nothing")
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
				path := filepath.Join(out, caseFileName(id))
				if err := cs.WriteFile(path); err != nil {
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

// caseFileName is the file of a session's case: its ID, with the
// characters a file name cannot hold escaped (a workflow ID may hold "/"),
// and .jsonl.
func caseFileName(id string) string {
	name := strings.NewReplacer("%", "%25", "/", "%2F", "\\", "%5C", "\x00", "%00").Replace(id)
	if name == "." || name == ".." {
		name = strings.ReplaceAll(name, ".", "%2E")
	}
	return name + ".jsonl"
}

// secretForms are the secrets and the forms they take inside JSON text (a
// tool's arguments and output are JSON): a secret holding a quote or a
// backslash is written escaped there.
func secretForms(values []string) []string {
	out := append([]string(nil), values...)
	for _, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if esc := string(b[1 : len(b)-1]); esc != v {
			out = append(out, esc)
		}
	}
	return out
}
