package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/devserver"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
)

func newDevCmd(g *globals) *cobra.Command {
	var (
		cfgPath      string
		dataDir      string
		temporalPort int
		uiPort       int
		httpAddr     string
		apiToken     string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run an embedded Temporal server on SQLite, its Web UI, and the worker",
		Long: "dev runs everything on one machine: a Temporal server on a SQLite file in the data dir,\n" +
			"the Temporal Web UI, and the worker with the config's agents. Starting it again on the\n" +
			"same data dir resumes every running session where it stopped.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			userDataDir := os.Getenv("DEX_DATA_DIR")
			cfg, abs, err := loadDevConfig(cfgPath, dataDir)
			if err != nil {
				return err
			}
			logger := configuredLogger(g, cmd, cfg)
			if userDataDir != "" && userDataDir != abs && cmd.Flags().Changed("data-dir") {
				logger.Warn("--data-dir overrides DEX_DATA_DIR", "DEX_DATA_DIR", userDataDir, "data_dir", abs)
			}
			started := time.Now()
			srv, err := devserver.Start(ctx, devserver.Options{
				DataDir:                     abs,
				Namespace:                   cfg.Temporal.Namespace,
				FrontendPort:                temporalPort,
				UIPort:                      uiPort,
				KeywordListSearchAttributes: []string{client.SearchAttributeActiveStepTypes},
				Logger:                      logger.With("component", "devserver"),
			})
			if err != nil {
				return err
			}
			defer func() {
				if err := srv.Stop(); err != nil {
					logger.Warn("stop the dev server", "error", err)
				}
			}()
			token, generated, err := devToken(apiToken)
			if err != nil {
				return err
			}
			d, err := daemon.Start(ctx, daemon.Options{
				Config:          cfg,
				Logger:          logger,
				TemporalAddress: srv.FrontendAddress(),
				HTTPListen:      httpAddr,
				ExtraTokens:     []httpapi.Token{{Name: "dev", Value: token}},
				WebUI:           webUI(),
			})
			if err != nil {
				return err
			}
			defer d.Stop()
			printBanner(g, cfg, srv, abs, cfgPath, time.Since(started), d.HTTPAddress(), token, generated)
			<-ctx.Done()
			logger.Info("stopping")
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "configs/dev.yaml", "config file")
	cmd.Flags().StringVar(&dataDir, "data-dir", envOr("DEX_DATA_DIR", ".dex"),
		"directory of the SQLite file and other state (default $DEX_DATA_DIR, else .dex); dev sets DEX_DATA_DIR to it\n"+
			"before it loads the config, for values such as ${DEX_DATA_DIR:-.dex}/orders.json (the flag wins over a DEX_DATA_DIR you set)")
	cmd.Flags().IntVar(&temporalPort, "temporal-port", 7233, "Temporal frontend port (keep it fixed across restarts)")
	cmd.Flags().IntVar(&uiPort, "ui-port", 8233, "Temporal Web UI port (0 disables the UI)")
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:8080", "address of the HTTP API and the web chat page")
	cmd.Flags().StringVar(&apiToken, "api-token", "", "API token (default $DEX_API_TOKEN, else a new random one printed in the banner)")
	return cmd
}

// loadDevConfig makes dataDir absolute and sets DEX_DATA_DIR to it, so
// that the config's ${DEX_DATA_DIR} references name this data dir (two data
// dirs never share the orders demo's store), then loads the config. The
// flag wins over a DEX_DATA_DIR the user set.
func loadDevConfig(cfgPath, dataDir string) (*config.Config, string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, "", fmt.Errorf("--data-dir %s: %w", dataDir, err)
	}
	if err := os.Setenv("DEX_DATA_DIR", abs); err != nil {
		return nil, "", fmt.Errorf("set DEX_DATA_DIR: %w", err)
	}
	cfg, err := config.Load(cfgPath)
	return cfg, abs, err
}

// devToken returns the dev API token: the flag, $DEX_API_TOKEN, or a new
// random one (generated reports that).
func devToken(flag string) (token string, generated bool, err error) {
	if flag != "" {
		return flag, false, nil
	}
	if v := os.Getenv("DEX_API_TOKEN"); v != "" {
		return v, false, nil
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(b), true, nil
}

func printBanner(g *globals, cfg *config.Config, srv *devserver.Server, dataDir, cfgPath string, took time.Duration, httpAddr, token string, generated bool) {
	w := g.stdout
	fmt.Fprintf(w, "\ndex-agent-worker %s is running (started in %s)\n\n", version, took.Round(time.Millisecond))
	fmt.Fprintf(w, "  Temporal frontend  %s  (namespace %s, task queue %s)\n", srv.FrontendAddress(), srv.Namespace(), cfg.Temporal.TaskQueue)
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(w, "  Temporal Web UI    %s\n", ui)
	}
	if httpAddr != "" && webUI() != nil && cfg.HTTP.WebUIEnabled() {
		fmt.Fprintf(w, "  Web chat           http://%s/#token=%s\n", httpAddr, token)
	}
	if httpAddr != "" {
		fmt.Fprintf(w, "  HTTP API           http://%s/v1  (Authorization: Bearer $DEX_API_TOKEN)\n", httpAddr)
	}
	fmt.Fprintf(w, "  Data directory     %s\n", dataDir)
	fmt.Fprintf(w, "  Config             %s\n", cfgPath)
	fmt.Fprintf(w, "  Agents            ")
	for _, a := range cfg.Agents {
		fmt.Fprintf(w, " %s (%s)", a.Name, a.FlowType)
	}
	fmt.Fprintln(w)
	if len(cfg.Agents) > 0 {
		self, _ := os.Executable()
		if self == "" {
			self = "dex-agent-worker"
		}
		addr := ""
		if srv.FrontendAddress() != "127.0.0.1:7233" {
			addr = " --address " + srv.FrontendAddress()
		}
		fmt.Fprintf(w, "\nTry, in another shell:\n\n")
		if generated {
			fmt.Fprintf(w, "  export DEX_API_TOKEN=%s\n", token)
		}
		if httpAddr != "" {
			fmt.Fprintf(w, "  %s chat --agent %s --http-address http://%s\n\n", self, cfg.Agents[0].Name, httpAddr)
		}
		printSessionSuggestions(w, self, addr, srv.FrontendAddress(), cfgPath, cfg)
	}
	fmt.Fprintf(w, "Stop with Ctrl-C; starting again on %s resumes every running session.\n\n", dataDir)
}

// printSessionSuggestions prints the banner's session commands: a session
// of the first agent, and the refund walkthrough when the config has the
// orders demo agent. addr is the --address flag the commands need ("" for
// the default frontend). A config other than configs/dev.yaml (which
// session start finds itself) is passed by its absolute path, with the
// frontend's address, so the commands work from any directory.
func printSessionSuggestions(w io.Writer, self, addr, frontend, cfgPath string, cfg *config.Config) {
	flags := addr
	if cfgPath != "configs/dev.yaml" {
		if abs, err := filepath.Abs(cfgPath); err == nil {
			cfgPath = abs
		}
		flags = " --address " + frontend + " --config " + shellQuote(cfgPath)
	}
	fmt.Fprintf(w, "  ID=$(%s session start%s --agent %s --message \"hello\")\n", self, flags, cfg.Agents[0].Name)
	fmt.Fprintf(w, "  %s session snapshot%s $ID\n\n", self, addr)
	for _, a := range cfg.Agents {
		if a.Name == "orders" && a.FlowType == "OrdersAgent" { // the demo agent of configs/dev.yaml
			fmt.Fprintf(w, "  The orders demo: a refund waits for your approval; the snapshot prints the approve command.\n")
			fmt.Fprintf(w, "  ID=$(%s session start%s --agent orders --message \"refund order 7\")\n", self, flags)
			fmt.Fprintf(w, "  %s session snapshot%s $ID\n\n", self, addr)
			break
		}
	}
}
