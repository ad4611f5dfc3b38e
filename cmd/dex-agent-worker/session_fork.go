package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/client"
)

func newSessionForkCmd(g *globals, f *sessionFlags) *cobra.Command {
	var at int64
	var id, message string
	var rewind bool
	cmd := &cobra.Command{
		Use:   "fork ID --at N [--id NEW] [--message TEXT] [--rewind]",
		Short: "Start a new session whose transcript is messages 1..N of another (no tool call runs again)",
		Long: "fork starts a new session of the same agent whose transcript is the session's messages 1..N,\n" +
			"shared through the message store. It inherits the summary that ends by N and the settings,\n" +
			"never pending approvals, queued messages, a running turn or usage. A point between a tool call\n" +
			"and its result is refused with the nearest valid points. --rewind closes the original.",
		Args: cobra.ExactArgs(1),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			fork, err := sessions.ForkSession(ctx, args[0], client.ForkOptions{AtSequence: at, SessionID: id, InitialMessage: message, Rewind: rewind})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, fork)
			return nil
		}),
	}
	cmd.Flags().Int64Var(&at, "at", 0, "the fork point: the fork keeps messages 1..N (0 keeps none)")
	cmd.Flags().StringVar(&id, "id", "", "the fork's session ID (default a new one)")
	cmd.Flags().StringVar(&message, "message", "", "a first message for the fork")
	cmd.Flags().BoolVar(&rewind, "rewind", false, "close the original once the fork started")
	_ = cmd.MarkFlagRequired("at")
	return cmd
}

func newSessionEditCmd(g *globals, f *sessionFlags) *cobra.Command {
	var id string
	var rewind bool
	cmd := &cobra.Command{
		Use:   "edit ID SEQUENCE TEXT [--id NEW] [--rewind]",
		Short: "Edit and resend a user message: fork before it and send TEXT instead",
		Args:  cobra.ExactArgs(3),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			seq, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || seq < 1 {
				return fmt.Errorf("SEQUENCE %q is not a message sequence (a number from 1)", args[1])
			}
			fork, err := sessions.EditMessage(ctx, args[0], seq, args[2], client.ForkOptions{SessionID: id, Rewind: rewind})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, fork)
			return nil
		}),
	}
	cmd.Flags().StringVar(&id, "id", "", "the new branch's session ID (default a new one)")
	cmd.Flags().BoolVar(&rewind, "rewind", false, "close the original once the new branch started")
	return cmd
}

func newSessionBranchesCmd(g *globals, f *sessionFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "branches ID [--json]",
		Short: "List the branches of a session's conversation: its root and every fork",
		Args:  cobra.ExactArgs(1),
		RunE: f.withSessions(g, func(ctx context.Context, sessions *client.AgentSessionClient, args []string) error {
			b, err := sessions.ListBranches(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, b)
			}
			fmt.Fprintf(g.stdout, "%s (root)\n", b.RootSessionID)
			for _, br := range b.Branches {
				fmt.Fprintf(g.stdout, "%s  forked from %s at %d  %s\n", br.SessionID, br.ParentSessionID, br.AtSequence, br.CreatedAt)
			}
			if b.HasMore {
				fmt.Fprintln(g.stdout, "(more branches than listed)")
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON")
	return cmd
}
