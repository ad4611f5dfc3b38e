package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/replaycheck"
	"github.com/dex-agents/dex-agent-worker/internal/sessionquery"
)

func newReplayCheckCmd(g *globals) *cobra.Command {
	f := &sessionFlags{}
	var dir, visibility string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "replay-check --config FILE (--histories DIR | --from-visibility 'agent=NAME ...' [--limit N])",
		Short: "Replay recorded session histories against this build before an upgrade",
		Long: "replay-check replays recorded session histories against the session workflow of this binary, with\n" +
			"Temporal's replayer, as a worker of --config registers it. A history that does not replay is a\n" +
			"session this build would break: it is reported with its session and the event where the replay\n" +
			"parted from the record (the workflow task whose commands the code no longer makes), and the\n" +
			"command exits 1. Run it with the new binary before an upgrade.\n\n" +
			"--histories reads every *.json in DIR (`temporal workflow show --output json`, or the Web UI's\n" +
			"download). --from-visibility fetches the newest --limit runs the filter lists from Temporal\n" +
			"(connection flags as for session): agent=NAME (repeatable), status=running|closed|all (default\n" +
			"all), since=DURATION (7d, 12h); every run of a session that continued as new is its own history.",
		Example: "  dex-agent-worker replay-check --config worker.yaml --histories ./histories\n" +
			"  dex-agent-worker replay-check --config worker.yaml --from-visibility 'agent=orders since=7d' --limit 200",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (dir == "") == (visibility == "" && !cmd.Flags().Changed("from-visibility")) {
				return errors.New("give --histories DIR or --from-visibility FILTER (one of them)")
			}
			if limit < 1 {
				return fmt.Errorf("--limit %d: want at least 1", limit)
			}
			cfg, err := f.configFile()
			if err != nil {
				return err
			}
			if cfg == nil {
				return errors.New("pass --config FILE (or $DEX_CONFIG): the worker config whose agents' sessions are replayed")
			}
			var hs []replaycheck.History
			if dir != "" {
				if hs, err = replaycheck.ReadDir(dir); err != nil {
					return err
				}
			} else {
				agents := map[string]string{}
				for _, a := range cfg.Agents {
					agents[a.Name] = a.FlowType
				}
				filter, err := sessionquery.Parse(visibility, sessionquery.StatusAll, agents)
				if err != nil {
					return fmt.Errorf("--from-visibility: %w", err)
				}
				t, err := f.temporal()
				if err != nil {
					return err
				}
				c, err := daemon.Dial(cmd.Context(), t, "", slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
				if err != nil {
					return err
				}
				defer c.Close()
				if hs, err = replaycheck.FromVisibility(cmd.Context(), c, t.Namespace, filter.Visibility(time.Now(), true), limit); err != nil {
					return err
				}
				if len(hs) == 0 {
					return fmt.Errorf("--from-visibility %q lists no session", visibility)
				}
			}
			checker := replaycheck.New(cfg)
			results := make([]replaycheck.Result, len(hs))
			failed := 0
			for i, h := range hs {
				results[i] = checker.Check(h)
				if !results[i].OK() {
					failed++
				}
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			} else {
				printReplayResults(g, results, failed)
			}
			if failed > 0 {
				return exitError{1} // the report said why
			}
			return nil
		},
	}
	f.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&dir, "histories", "", "directory of recorded histories (*.json)")
	cmd.Flags().StringVar(&visibility, "from-visibility", "", "replay the runs this filter lists from Temporal, such as 'agent=orders since=7d'")
	cmd.Flags().IntVar(&limit, "limit", 100, "with --from-visibility: at most this many runs, newest first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}

func printReplayResults(g *globals, results []replaycheck.Result, failed int) {
	for _, r := range results {
		status := "ok  "
		if !r.OK() {
			status = "FAIL"
		}
		fmt.Fprintf(g.stdout, "%s  %s  %s, %d events\n", status, r.Name, r.WorkflowType, r.Events)
		if r.OK() {
			continue
		}
		if r.SessionID != "" {
			fmt.Fprintf(g.stdout, "      session %s\n", r.SessionID)
		}
		if r.EventID > 0 {
			fmt.Fprintf(g.stdout, "      parted from the record at event %d: the workflow task completed there made other commands\n", r.EventID)
		}
		fmt.Fprintf(g.stdout, "      %s\n", strings.ReplaceAll(r.Error, "\n", "\n      "))
	}
	fmt.Fprintf(g.stdout, "replayed %d histories: %d ok, %d failed\n", len(results), len(results)-failed, failed)
}
