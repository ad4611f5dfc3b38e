package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/devserver"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func newEngineCmd(g *globals) *cobra.Command {
	var (
		dataDir   string
		port      int
		uiPort    int
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "engine --data-dir DIR [--port 7233] [--ui-port 8233]",
		Short: "Run the embedded Temporal server on SQLite alone, for `run` processes to connect to",
		Long: "engine runs the embedded Temporal server (the one `dev` runs) without a worker: a\n" +
			"one-machine cluster for several `run --role worker` and `run --role api` processes, and\n" +
			"for tests. It listens on 127.0.0.1 only, keeps its state in DIR/temporal.db, and registers\n" +
			"the ActiveStepTypes search attribute. Keep --port fixed across restarts of one data dir.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger := g.logger()
			abs, err := filepath.Abs(dataDir)
			if err != nil {
				return fmt.Errorf("--data-dir %s: %w", dataDir, err)
			}
			started := time.Now()
			srv, err := devserver.Start(ctx, devserver.Options{
				DataDir:                     abs,
				Namespace:                   namespace,
				FrontendPort:                port,
				UIPort:                      uiPort,
				KeywordListSearchAttributes: []string{wire.SearchAttributeActiveStepTypes},
				Logger:                      logger.With("component", "engine"),
			})
			if err != nil {
				return err
			}
			w := g.stdout
			fmt.Fprintf(w, "\ndex-agent-worker %s engine is running (started in %s)\n\n", version, time.Since(started).Round(time.Millisecond))
			fmt.Fprintf(w, "  Temporal frontend  %s  (namespace %s)\n", srv.FrontendAddress(), srv.Namespace())
			if ui := srv.UIAddress(); ui != "" {
				fmt.Fprintf(w, "  Temporal Web UI    %s\n", ui)
			}
			fmt.Fprintf(w, "  Data directory     %s\n\n", abs)
			fmt.Fprintf(w, "Connect workers with temporal.address: %s in their config. Stop with Ctrl-C.\n", srv.FrontendAddress())
			logger.Info("engine started", "frontend", srv.FrontendAddress(), "namespace", srv.Namespace(), "ui", srv.UIAddress())
			<-ctx.Done()
			logger.Info("stopping the engine")
			return srv.Stop()
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", envOr("DEX_DATA_DIR", ".dex"), "directory of the SQLite file (default $DEX_DATA_DIR, else .dex)")
	cmd.Flags().IntVar(&port, "port", 7233, "Temporal frontend port on 127.0.0.1 (keep it fixed across restarts)")
	cmd.Flags().IntVar(&uiPort, "ui-port", 8233, "Temporal Web UI port (0 disables the UI)")
	cmd.Flags().StringVar(&namespace, "namespace", config.DefaultNamespace, "namespace to create")
	return cmd
}
