package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/devserver"
	"github.com/dex-agents/dex-agent-worker/internal/httpapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func newDevCmd(g *globals) *cobra.Command {
	var (
		cfgPath      string
		dataDir      string
		temporalPort int
		uiPort       int
		httpAddr     string
		apiToken     string
		newToken     bool
		showTraces   bool
		reset        bool
		reattach     map[string]string
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
			if reset {
				if err := devserver.Reset(dataDir); err != nil {
					return err
				}
				fmt.Fprintf(g.stderr, "reset %s: every session, message and demo order is gone\n", dataDir)
			}
			cfg, abs, err := loadDevConfig(cfgPath, dataDir)
			if err != nil {
				return err
			}
			// A data dir that does not exist yet is a new one: say so, so
			// that a dev started from another directory (--data-dir is
			// relative to the current one) does not look like lost sessions.
			_, statErr := os.Stat(abs)
			fresh := os.IsNotExist(statErr)
			access, err := devAccess(cfg, apiToken, cmd.Flags().Changed("api-token"), os.Getenv("DEX_API_TOKEN"), devTokenFile(abs), newToken)
			if err != nil {
				return err
			}
			links, err := devApprovalLinks(cfg, abs, httpAddr)
			if err != nil {
				return err
			}
			logger := configuredLogger(g, cmd, cfg)
			if links != "" {
				logger.Info(links)
			}
			if userDataDir != "" && userDataDir != abs && cmd.Flags().Changed("data-dir") {
				logger.Warn("--data-dir overrides DEX_DATA_DIR", "DEX_DATA_DIR", userDataDir, "data_dir", abs)
			}
			started := time.Now()
			daemon.SizeWorkflowCache(cfg)
			srv, err := devserver.Start(ctx, devserver.Options{
				DataDir:                     abs,
				Namespace:                   cfg.Temporal.Namespace,
				FrontendPort:                temporalPort,
				UIPort:                      uiPort,
				KeywordListSearchAttributes: []string{wire.SearchAttributeActiveStepTypes},
				Logger:                      logger.With("component", "devserver"),
			})
			if err != nil {
				return explainBusyPort(err, abs)
			}
			defer func() {
				if err := srv.Stop(); err != nil {
					logger.Warn("stop the dev server", "error", err)
				}
			}()
			var traceConsole io.Writer
			if showTraces {
				traceConsole = cmd.ErrOrStderr()
			}
			d, err := daemon.Start(ctx, daemon.Options{
				TraceConsole:     traceConsole,
				Config:           cfg,
				Logger:           logger,
				MessageStorePath: filepath.Join(abs, "messages.db"),
				TemporalAddress:  srv.FrontendAddress(),
				HTTPListen:       httpAddr,
				ExtraTokens:      access.tokens,
				WebUI:            webUI(),
				Version:          version,
				Reattach:         reattach,
			})
			if err != nil {
				return explainBusyPort(err, abs)
			}
			defer d.Stop()
			printBanner(g, cfg, srv, abs, fresh, cfgPath, time.Since(started), d.HTTPAddress(), access)
			<-ctx.Done()
			logger.Info("stopping")
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "configs/dev.yaml", "config file")
	cmd.Flags().StringToStringVar(&reattach, "reattach", nil,
		"NAME=PID:NETWORK:ADDRESS: attach plugin NAME to a runner you started in debug mode (DEX_RUNNER_DEBUG=1, say under a\n"+
			"debugger) instead of starting its command; the runner prints the value (repeat the flag for more plugins)")
	cmd.Flags().StringVar(&dataDir, "data-dir", envOr("DEX_DATA_DIR", ".dex"),
		"directory of the SQLite file and other state (default $DEX_DATA_DIR, else .dex); dev sets DEX_DATA_DIR to it\n"+
			"before it loads the config, for values such as ${DEX_DATA_DIR:-.dex}/orders.json (the flag wins over a DEX_DATA_DIR you set)")
	cmd.Flags().IntVar(&temporalPort, "temporal-port", 7233, "Temporal frontend port (keep it fixed across restarts)")
	cmd.Flags().IntVar(&uiPort, "ui-port", 8233, "Temporal Web UI port (0 disables the UI)")
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:8080", "address of the HTTP API and the web chat page")
	cmd.Flags().BoolVar(&reset, "reset", false, "start anew: delete everything in the data dir first (sessions, messages, the demo's orders); refused while another dev runs on it")
	cmd.Flags().BoolVar(&showTraces, "trace", false, "print each turn's trace (its span tree) to stderr when the turn ends")
	cmd.Flags().StringVar(&apiToken, "api-token", "", "API token when the config declares no http.auth.tokens (default $DEX_API_TOKEN, else the one kept in the data dir,\n"+
		"made at random the first time and printed in the banner)")
	cmd.Flags().BoolVar(&newToken, "new-token", false, "replace the API token kept in the data dir with a new random one (the old one stops working)")
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

// apiAccess is how dev's HTTP API authenticates callers.
type apiAccess struct {
	// tokens are the tokens dev adds to the config's: none when the config
	// declares http.auth.tokens, else the one dev token.
	tokens []httpapi.Token
	// source says where the token in force comes from, for the banner; it
	// never holds a value.
	source string
	// token is dev's own token (shown in the banner's links), or "" when
	// the config's tokens are in force.
	token string
	// generated reports a new random token, printed for the user to export.
	generated bool
}

// explainBusyPort names the flag that moves a port another process holds
// (often another dev, perhaps on the same data dir).
func explainBusyPort(err error, dataDir string) error {
	var busy *devserver.PortInUseError
	flag := ""
	switch {
	case errors.As(err, &busy) && busy.What == "frontend":
		flag = fmt.Sprintf("--temporal-port (the Temporal frontend's port %d)", busy.Port)
	case errors.As(err, &busy):
		flag = fmt.Sprintf("--ui-port (the Temporal Web UI's port %d; 0 turns the UI off)", busy.Port)
	case errors.Is(err, syscall.EADDRINUSE):
		flag = "--http (the HTTP API's address; 127.0.0.1:0 picks a free port)"
	default:
		return err
	}
	return fmt.Errorf("%w\n\nanother process holds the port, often another dev: stop it (a dev on %s resumes every session when started again), "+
		"or start this one with another %s", err, dataDir, flag)
}

// devTokenFile is where dev keeps its generated API token in dataDir.
func devTokenFile(dataDir string) string { return filepath.Join(dataDir, "api-token") }

// devAccess decides dev's API tokens. When the config declares
// http.auth.tokens, dev serves exactly those and adds none, so a scoped
// config is never widened by an unscoped token beside it; passing
// --api-token then is an error. Otherwise dev's one token is the flag,
// $DEX_API_TOKEN, or the one kept in tokenFile (mode 0600), made at random
// the first time or when rotate is set, so tabs and shells keep working
// across restarts.
func devAccess(cfg *config.Config, flag string, flagSet bool, env, tokenFile string, rotate bool) (apiAccess, error) {
	if n := len(cfg.HTTP.Auth.Tokens); n > 0 {
		names := make([]string, n)
		for i := range names {
			names[i] = cfg.HTTP.Auth.TokenName(i)
		}
		list := fmt.Sprintf("%d token(s): %s", n, strings.Join(names, ", "))
		if flagSet {
			return apiAccess{}, fmt.Errorf("--api-token cannot be used with this config: it declares http.auth.tokens (%s), "+
				"which dev serves as they are; call the API with one of them, or remove http.auth.tokens to use --api-token", list)
		}
		return apiAccess{source: "from the config (" + list + ")"}, nil
	}
	switch {
	case flag != "":
		return apiAccess{tokens: []httpapi.Token{{Name: "dev", Value: flag, Operator: true}}, source: "from --api-token", token: flag}, nil
	case flagSet:
		return apiAccess{}, errors.New("--api-token is empty: pass a token, or leave the flag out to use $DEX_API_TOKEN or a generated one")
	case env != "":
		return apiAccess{tokens: []httpapi.Token{{Name: "dev", Value: env, Operator: true}}, source: "from $DEX_API_TOKEN", token: env}, nil
	}
	token, made, err := keptSecret(tokenFile, 24, rotate, "API token", "remove it, or pass --new-token to replace it")
	if err != nil {
		return apiAccess{}, err
	}
	source := "kept in " + tokenFile + " (--new-token replaces it)"
	if made {
		source = "generated and kept in " + tokenFile + " (printed below)"
	}
	return apiAccess{tokens: []httpapi.Token{{Name: "dev", Value: token, Operator: true}}, source: source, token: token, generated: true}, nil
}

// writePrivate writes text to path (mode 0600, in a directory made with
// mode 0700 if needed), through a temporary file, so a crash leaves the
// old file or the new one.
func writePrivate(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.WriteString(text); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// engineAddresses is what the banner shows of the embedded engine.
type engineAddresses interface {
	FrontendAddress() string
	Namespace() string
	UIAddress() string
}

func printBanner(g *globals, cfg *config.Config, srv engineAddresses, dataDir string, fresh bool, cfgPath string, took time.Duration, httpAddr string, access apiAccess) {
	w := g.stdout
	base := "http://" + httpAddr
	if cfg.HTTP.TLS != nil {
		base = "https://" + httpAddr
	}
	fmt.Fprintf(w, "\ndex-agent-worker %s is running (started in %s)\n\n", version, took.Round(time.Millisecond))
	fmt.Fprintf(w, "  Temporal frontend  %s  (namespace %s, task queue %s)\n", srv.FrontendAddress(), srv.Namespace(), cfg.Temporal.TaskQueue)
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(w, "  Temporal Web UI    %s\n", ui)
	}
	if httpAddr != "" && webUI() != nil && cfg.HTTP.WebUIEnabled() {
		if access.token != "" {
			fmt.Fprintf(w, "  Web chat           %s/#token=%s\n", base, access.token)
		} else {
			fmt.Fprintf(w, "  Web chat           %s/  (paste one of the config's tokens)\n", base)
		}
	}
	if httpAddr != "" {
		fmt.Fprintf(w, "  HTTP API           %s/v1  (Authorization: Bearer $DEX_API_TOKEN)\n", base)
		fmt.Fprintf(w, "  API token          %s\n", access.source)
	}
	fmt.Fprintf(w, "  Data directory     %s\n", dataDir)
	if fresh {
		fmt.Fprintf(w, "                     (new: no sessions yet; --data-dir is relative to the current directory)\n")
	}
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
		if access.generated {
			fmt.Fprintf(w, "  export DEX_API_TOKEN=%s\n", access.token)
		}
		if httpAddr != "" {
			fmt.Fprintf(w, "  %s chat --agent %s --http-address %s\n\n", self, cfg.Agents[0].Name, base)
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
