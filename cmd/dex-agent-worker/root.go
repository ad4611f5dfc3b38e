package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/daemon"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

// exitError carries an exit code for errors that were already reported.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

type globals struct {
	stdin          io.Reader // the chat's input
	stdout, stderr io.Writer
	logFormat      string
	logLevel       string
}

func (g *globals) logger() *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	if g.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(g.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.stderr, opts))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := daemon.ShutdownContext(context.Background(), func() {
		fmt.Fprintln(stderr, "second signal: stopping now; running steps are cut short")
		os.Exit(130)
	})
	defer stop()
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "dex-agent-worker",
		Short:         "Run durable AI-agent sessions on Temporal",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(
		newDevCmd(g),
		newRunCmd(g),
		newEngineCmd(g),
		newLoadtestCmd(g),
		newConfigCmd(g),
		newPluginCmd(g),
		newSessionCmd(g),
		newChatCmd(g),
		newInboxCmd(g),
		newReplayCheckCmd(g),
		newEvalCmd(g),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(g.stdout, "dex-agent-worker", version) },
		},
	)
	return root
}
