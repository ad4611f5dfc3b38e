package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/chat"
)

const defaultHTTPAddress = "http://127.0.0.1:8080"

func newChatCmd(g *globals) *cobra.Command {
	var agent, sessionID, address, token string
	cmd := &cobra.Command{
		Use:   "chat --agent NAME [--session ID]",
		Short: "Chat with an agent in the terminal, over the worker's HTTP API",
		Long: "chat starts a session of the agent, or resumes --session ID, then sends each line you type\n" +
			"and shows the agent's answer as it streams, its tool calls, and the usage of each turn.\n" +
			"It asks inline when a tool call needs approval: y approves, r rejects with a reason.\n" +
			"/model NAME makes the next turns use one of the models the agent allows (the session\n" +
			"setting \"model\"); /model shows it, /model - returns to the agent's default.\n" +
			"/plan TEXT sends TEXT in plan mode: the agent drafts a plan, shown as a checklist that follows\n" +
			"the work; /execute runs the draft. /help lists the commands.\n\n" +
			"With piped input, each line is one message (or the answer to an approval), sent once the\n" +
			"previous turn ended; chat exits at the end of the input, after the last turn.\n\n" +
			"The worker serves the API when its config sets http.listen; the token is one of http.auth.tokens.",
		Example: "  export DEX_API_TOKEN=...\n" +
			"  dex-agent-worker chat --agent orders\n" +
			"  printf 'refund order 7\\ny\\n' | dex-agent-worker chat --agent orders",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := chat.InterruptContext(cmd.Context()) // Ctrl-C stops a running turn; a second one quits
			if token == "" {
				token = os.Getenv("DEX_API_TOKEN")
			}
			if token == "" {
				return errors.New("no API token: pass --token or set DEX_API_TOKEN")
			}
			c, err := chat.NewClient(address, token, nil)
			if err != nil {
				return err
			}
			resume := "dex-agent-worker chat --session %s"
			if cmd.Flags().Changed("http-address") {
				resume += " --http-address " + address
			}
			if sessionID == "" {
				if agent == "" {
					return errors.New("pass --agent NAME to start a session, or --session ID to resume one")
				}
				// An unknown agent fails here with the agents the token may
				// start, as session start does.
				if _, err := (apiFlags{address: address, token: token}).flowType(ctx, agent); err != nil {
					return err
				}
				sctx, cancel := context.WithTimeout(ctx, time.Minute)
				id, err := c.StartSession(sctx, chat.StartRequest{Agent: agent})
				cancel()
				if err != nil {
					return connectHint(err, c)
				}
				sessionID = id
			}
			fmt.Fprintf(g.stderr, "session %s; resume with: "+resume+"\n", sessionID, sessionID)
			s := &chat.Session{
				Client: c, ID: sessionID, Agent: agent,
				In: g.stdin, Out: g.stdout, Notes: g.stderr, Interactive: isTerminal(g.stdin),
			}
			err = s.Run(ctx)
			switch {
			case err != nil && ctx.Err() != nil:
				fmt.Fprintf(g.stderr, "chat ended; resume with: "+resume+"\n", sessionID)
				return nil
			case errors.Is(err, chat.ErrPendingApproval):
				return fmt.Errorf("%w; answer it with: "+resume, err, sessionID)
			case err != nil:
				return connectHint(err, c)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "agent to start a session of (checked against --session when both are set)")
	f.StringVar(&sessionID, "session", "", "resume this session instead of starting one")
	f.StringVar(&address, "http-address", envOr("DEX_HTTP_ADDRESS", defaultHTTPAddress), "the worker's HTTP API ($DEX_HTTP_ADDRESS)")
	f.StringVar(&token, "token", "", "API bearer token (default $DEX_API_TOKEN)")
	return cmd
}

// connectHint explains an error of a request that never reached the API.
func connectHint(err error, c *chat.Client) error {
	var apiErr *chat.APIError
	var urlErr *url.Error
	if errors.As(err, &apiErr) || !errors.As(err, &urlErr) {
		return err
	}
	return fmt.Errorf("%w (is the worker running with http.listen set? pass --http-address or set DEX_HTTP_ADDRESS; now %s)", err, c.BaseURL())
}

// isTerminal reports whether r is a terminal, which gets prompts.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
