package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
)

func newRunCmd(g *globals) *cobra.Command {
	var (
		cfgPath, role, httpAddr, modelQueues string
		dialWait                             time.Duration
	)
	cmd := &cobra.Command{
		Use:   "run --config FILE [--role all|worker|api] [--http ADDR] [--model-queues all|none|NAME,...]",
		Short: "Run the worker against an existing Temporal frontend",
		Long: "run connects to the Temporal frontend the config names (temporal.address, namespace, tls,\n" +
			"api_key) and runs this process's role:\n" +
			"  all     hosts Steps and serves the HTTP API and the web page (the default)\n" +
			"  worker  hosts Steps only; with an HTTP address it serves /healthz and /readyz alone\n" +
			"  api     serves the HTTP API and the web page only (needs events.backend: redis and\n" +
			"          message_store driver postgres), so the API scales apart from the Steps\n" +
			"--model-queues picks the model_queues this process polls (all by default): polling a queue\n" +
			"from a fixed set of processes bounds its concurrent calls across the deployment by that\n" +
			"set's max_concurrent_per_worker together.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			logger := configuredLogger(g, cmd, cfg)
			d, err := daemon.Start(cmd.Context(), daemon.Options{
				Config: cfg, Logger: logger, WebUI: webUI(), Version: version, Role: role, HTTPListen: httpAddr,
				DialWait: dialWait, ModelQueues: modelQueues,
			})
			if err != nil {
				return err
			}
			logger.Info("running; stop with Ctrl-C", "role", role, "temporal", cfg.Temporal.Address, "http", d.HTTPAddress())
			<-cmd.Context().Done()
			logger.Info("stopping")
			d.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "config file (required)")
	cmd.Flags().StringVar(&role, "role", daemon.RoleAll, "what this process does: all, worker or api")
	cmd.Flags().StringVar(&httpAddr, "http", "", "HTTP listen address host:port (overrides http.listen)")
	cmd.Flags().StringVar(&modelQueues, "model-queues", "all", "the model_queues this process polls: all, none, or names separated by commas")
	cmd.Flags().DurationVar(&dialWait, "temporal-wait", time.Minute, "keep trying an unreachable Temporal frontend this long at start (0: fail at once)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// configuredLogger honours the config's logging section unless a flag overrides it.
func configuredLogger(g *globals, cmd *cobra.Command, cfg *config.Config) *slog.Logger {
	if !cmd.Flags().Changed("log-format") && cfg.Logging.Format != "" {
		g.logFormat = cfg.Logging.Format
	}
	if !cmd.Flags().Changed("log-level") && cfg.Logging.Level != "" {
		g.logLevel = cfg.Logging.Level
	}
	return g.logger()
}
