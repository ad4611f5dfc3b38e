package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Turn control and the session lifecycle from the command line: steer,
// delete-queued, cancel, close, terminate.

func newSessionSteerCmd(g *globals, f *sessionFlags) *cobra.Command {
	var messageID string
	var planMode bool
	cmd := &cobra.Command{
		Use:   "steer ID (TEXT | --message-id MSG)",
		Short: "Steer the running turn with new text or a queued message",
		Long: "steer ends the running turn at its next safe step (a started model call or tool runs to its end;\n" +
			"approvals, questions and waits are cancelled) and starts the next turn with the steered message.\n" +
			"While no turn runs, TEXT is queued and starts a turn at once. --message-id steers a queued message\n" +
			"(see the queued messages in: session snapshot ID).",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case messageID != "" && len(args) != 1:
				return errors.New("with --message-id, give the session ID only")
			case messageID == "" && len(args) != 2:
				return errors.New("give the session ID and TEXT, or --message-id MSG")
			}
			return nil
		},
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			req := wire.SteerUserMessageRequest{MessageID: messageID, PlanMode: planMode}
			if messageID == "" {
				req.Text = args[1]
			}
			ok, err := sessions.SteerUserMessage(ctx, args[0], req)
			switch {
			case err != nil:
				return err
			case !ok && messageID != "":
				return fmt.Errorf("message %s is not queued (it started a turn, was deleted, or no turn runs to steer); see: session snapshot %s", messageID, args[0])
			case !ok:
				return errors.New("the session did not take the steer (blank or too long text, a full queue, or plan mode is off)")
			}
			fmt.Fprintln(g.stdout, "steered")
			return nil
		}),
	}
	cmd.Flags().StringVar(&messageID, "message-id", "", "steer with this queued message instead of new text")
	cmd.Flags().BoolVar(&planMode, "plan", false, "the steered text starts a planning turn")
	return cmd
}

func newSessionDeleteQueuedCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete-queued ID MSG",
		Short: "Delete a queued message before its turn starts",
		Args:  cobra.ExactArgs(2),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			ok, err := sessions.DeleteQueuedMessage(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("message %s is not queued (it started a turn or was deleted)", args[1])
			}
			fmt.Fprintln(g.stdout, "deleted")
			return nil
		}),
	}
}

func newSessionCancelCmd(g *globals, f *sessionFlags) *cobra.Command {
	var turn string
	cmd := &cobra.Command{
		Use:   "cancel ID [--turn TURN]",
		Short: "Stop the running turn (default: the active turn)",
		Long: "cancel stops the turn now: a running model call is cancelled, approvals, questions and waits are\n" +
			"rejected, started tool tasks are abandoned, and a tool that has started runs to its end.",
		Args: cobra.ExactArgs(1),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			if turn == "" {
				snap, err := sessions.GetAgentSnapshot(ctx, args[0])
				if err != nil {
					return err
				}
				if snap.State == nil || snap.State.ActiveTurnID == "" {
					return fmt.Errorf("session %s runs no turn", args[0])
				}
				turn = snap.State.ActiveTurnID
			}
			ok, err := sessions.CancelTurn(ctx, args[0], turn)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("turn %s is not running (it ended, or another turn runs)", turn)
			}
			fmt.Fprintln(g.stdout, "cancelled "+turn)
			return nil
		}),
	}
	cmd.Flags().StringVar(&turn, "turn", "", "the turn to stop (default: the active turn)")
	return cmd
}

func newSessionCloseCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "close ID",
		Short: "Close a session: its running turn finishes, new messages are refused",
		Args:  cobra.ExactArgs(1),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			ok, err := sessions.CloseSession(ctx, args[0])
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("session %s has not started", args[0])
			}
			fmt.Fprintln(g.stdout, "closed")
			return nil
		}),
	}
}

func newSessionTerminateCmd(g *globals, f *sessionFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "terminate ID [--reason TEXT]",
		Short: "End a session's workflow at once (operators; prefer cancel and close)",
		Long: "terminate ends the session's workflow at once: running steps are abandoned, and a write that had\n" +
			"started may have taken effect. The session stays readable.",
		Args: cobra.ExactArgs(1),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			if err := sessions.TerminateSession(ctx, args[0], reason); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "terminated")
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the workflow's history")
	return cmd
}

// withSessions is a command's RunE that dials Temporal with the session
// flags and runs fn with the client.
func (f *sessionFlags) withSessions(g *globals, fn func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		sessions, closeFn, err := f.dial(cmd.Context(), g)
		if err != nil {
			return err
		}
		defer closeFn()
		return fn(cmd.Context(), sessions, args)
	}
}

func newSessionUpgradeCmd(g *globals, f *sessionFlags) *cobra.Command {
	var deployment string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "upgrade [--deployment NAME] [--dry-run]",
		Short: "Move the sessions pinned to older worker builds to the current one",
		Long: "upgrade signals every running session pinned to a build of the worker deployment other than its\n" +
			"current one (check_worker_version). A session between turns continues as new onto the current\n" +
			"build at once; one in a turn does when the turn ends. Once it finds none, the old build's\n" +
			"workers may stop. The deployment is --deployment, else the config's temporal.deployment.name.",
		Args: cobra.NoArgs,
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, _ []string) error {
			if deployment == "" {
				cfg, err := f.configFile()
				if err != nil {
					return err
				}
				if cfg == nil || cfg.Temporal.Deployment == nil {
					return errors.New("name the worker deployment: --deployment NAME, or --config FILE with temporal.deployment")
				}
				deployment = cfg.Temporal.Deployment.Name
			}
			res, err := sessions.MoveSessionsToCurrentVersion(ctx, deployment, dryRun)
			for _, id := range res.Woken {
				fmt.Fprintln(g.stdout, id)
			}
			if err != nil {
				return err
			}
			verb := "signalled"
			if dryRun {
				verb = "would signal"
			}
			fmt.Fprintf(g.stderr, "current build %s; %s %d session(s) on older builds\n", res.Current, verb, len(res.Woken))
			return nil
		}),
	}
	cmd.Flags().StringVar(&deployment, "deployment", "", "the worker deployment (default the config's temporal.deployment.name)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the sessions, signal none")
	return cmd
}
