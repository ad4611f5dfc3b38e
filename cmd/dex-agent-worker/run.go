package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
)

func newRunCmd(g *globals) *cobra.Command {
	var cfgPath string
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Run the worker against an existing Temporal frontend",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return err
			}
			logger := configuredLogger(g, cmd, cfg)
			d, err := daemon.Start(cmd.Context(), daemon.Options{Config: cfg, Logger: logger, WebUI: webUI(), Version: version})
			if err != nil {
				return err
			}
			logger.Info("running; stop with Ctrl-C", "temporal", cfg.Temporal.Address)
			<-cmd.Context().Done()
			logger.Info("stopping")
			d.Stop()
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "config file (required)")
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
