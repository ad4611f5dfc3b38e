package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/loadtest"
)

func newLoadtestCmd(g *globals) *cobra.Command {
	var (
		o       loadtest.Options
		asJSON  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "loadtest --sessions N --concurrency C --turns T --agent NAME",
		Short: "Drive a running deployment through its HTTP API and report turns/s and latencies",
		Long: "loadtest starts sessions of an agent through the HTTP API, follows each on its event stream\n" +
			"as a browser does, and sends each its turns one after the other. It reports turns per second\n" +
			"and the p50/p99 of a whole turn (send -> turn_completed) and of send -> first text_delta.\n" +
			"Use an agent with a scripted model (dev's echo) to measure the deployment, not a provider.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Token == "" {
				o.Token = os.Getenv("DEX_API_TOKEN")
			}
			if o.Token == "" {
				return errors.New("no API token: pass --token or set DEX_API_TOKEN")
			}
			if !strings.Contains(o.BaseURL, "://") {
				o.BaseURL = "http://" + o.BaseURL
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel func()
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			res, err := loadtest.Run(ctx, o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprint(g.stdout, res)
			if res.FailedTurns > 0 {
				return fmt.Errorf("%d of %d turns failed", res.FailedTurns, res.FailedTurns+res.Turns)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.BaseURL, "http-address", envOr("DEX_HTTP_ADDRESS", defaultHTTPAddress), "the deployment's HTTP API ($DEX_HTTP_ADDRESS)")
	f.StringVar(&o.Token, "token", "", "API bearer token (default $DEX_API_TOKEN)")
	f.StringVar(&o.Agent, "agent", "echo", "the agent of every session")
	f.IntVar(&o.Sessions, "sessions", 20, "sessions in all")
	f.IntVar(&o.Concurrency, "concurrency", 10, "sessions at once")
	f.IntVar(&o.Turns, "turns", 5, "turns per session")
	f.StringVar(&o.Message, "message", "hello", "each turn's message")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", 2*time.Minute, "fail a turn that takes longer")
	f.DurationVar(&timeout, "timeout", 0, "stop the whole run after this long (0: no limit)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
