package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
)

type sessionFlags struct {
	address   string
	namespace string
	taskQueue string
	config    string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (f *sessionFlags) dial(ctx context.Context, g *globals) (*client.AgentSessionClient, func(), error) {
	c, err := temporalclient.DialContext(ctx, temporalclient.Options{
		HostPort:  f.address,
		Namespace: f.namespace,
		Logger:    log.NewStructuredLogger(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to Temporal at %s: %w (is `make dev` running? set --address or DEX_TEMPORAL_ADDRESS)", f.address, err)
	}
	return client.New(c, f.namespace, f.taskQueue), c.Close, nil
}

func newSessionCmd(g *globals) *cobra.Command {
	f := &sessionFlags{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Start and drive agent sessions",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.address, "address", envOr("DEX_TEMPORAL_ADDRESS", "localhost:7233"), "Temporal frontend address ($DEX_TEMPORAL_ADDRESS)")
	pf.StringVar(&f.namespace, "namespace", envOr("DEX_TEMPORAL_NAMESPACE", "default"), "Temporal namespace")
	pf.StringVar(&f.taskQueue, "task-queue", client.DefaultTaskQueue, "the workers' task queue")
	pf.StringVar(&f.config, "config", envOr("DEX_CONFIG", ""), "worker config that maps agent names to flow types (default configs/dev.yaml when present)")
	cmd.AddCommand(
		newSessionStartCmd(g, f),
		newSessionSendCmd(g, f),
		newSessionResolveCmd(g, f, true),
		newSessionResolveCmd(g, f, false),
		newSessionSnapshotCmd(g, f),
		newSessionMessagesCmd(g, f),
	)
	return cmd
}

// flowType maps an agent name to its flow type through the config.
func (f *sessionFlags) flowType(agent string) (string, error) {
	path := f.config
	if path == "" {
		if _, err := os.Stat("configs/dev.yaml"); err == nil {
			path = "configs/dev.yaml"
		}
	}
	if path == "" {
		return "", fmt.Errorf("cannot map agent %q to its flow type: pass --config (the worker's config file) or --flow-type", agent)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return "", err
	}
	if a, ok := cfg.Agent(agent); ok {
		if !cfgTaskQueueSet(f) {
			f.taskQueue = cfg.Temporal.TaskQueue
		}
		return a.FlowType, nil
	}
	var names []string
	for _, a := range cfg.Agents {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	return "", fmt.Errorf("%s has no agent %q (it has: %s)", path, agent, strings.Join(names, ", "))
}

func cfgTaskQueueSet(f *sessionFlags) bool { return f.taskQueue != client.DefaultTaskQueue }

func newSessionStartCmd(g *globals, f *sessionFlags) *cobra.Command {
	var agent, flowType, id, message, requestID string
	cmd := &cobra.Command{
		Use:   "start --agent NAME [--id ID] [--message TEXT]",
		Short: "Start a session; prints its ID alone on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flowType == "" {
				if agent == "" {
					return errors.New("pass --agent NAME (or --flow-type TYPE)")
				}
				ft, err := f.flowType(agent)
				if err != nil {
					return err
				}
				flowType = ft
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			sid, err := sessions.StartSession(cmd.Context(), client.StartSessionOptions{FlowType: flowType, SessionID: id, InitialMessage: message, RequestID: requestID})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, sid)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent name from the worker config")
	cmd.Flags().StringVar(&flowType, "flow-type", "", "the agent's flow type, instead of --agent")
	cmd.Flags().StringVar(&id, "id", "", "session ID (default: a new random ID)")
	cmd.Flags().StringVar(&message, "message", "", "first user message")
	cmd.Flags().StringVar(&requestID, "request-id", "", "makes a retried start idempotent")
	return cmd
}

func newSessionSendCmd(g *globals, f *sessionFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "send ID TEXT",
		Short: "Send a user message",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			ok, err := sessions.SendUserMessage(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("the session refused the message (blank text)")
			}
			fmt.Fprintln(g.stdout, "queued")
			return nil
		},
	}
}

func newSessionResolveCmd(g *globals, f *sessionFlags, approve bool) *cobra.Command {
	var message string
	use, short := "approve ID INTERRUPT_ID", "Approve a pending tool call"
	if !approve {
		use, short = "reject ID INTERRUPT_ID [--message TEXT]", "Reject a pending tool call"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			ok, err := sessions.ResolveInterrupt(cmd.Context(), args[0], client.ResolveInterruptRequest{InterruptID: args[1], Approved: approve, RejectionMessage: message})
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("interrupt %s is not pending (unknown, already resolved, or past its deadline)", args[1])
			}
			if approve {
				fmt.Fprintln(g.stdout, "approved")
			} else {
				fmt.Fprintln(g.stdout, "rejected")
			}
			return nil
		},
	}
	if !approve {
		cmd.Flags().StringVar(&message, "message", "", "what the model is told about the rejection")
	}
	return cmd
}

func newSessionSnapshotCmd(g *globals, f *sessionFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "snapshot ID [--json]",
		Short: "Show a session's state, messages, pending approvals and usage",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			snap, err := sessions.GetAgentSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, snap)
			}
			printSnapshot(g.stdout, snap)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snapshot JSON")
	return cmd
}

func newSessionMessagesCmd(g *globals, f *sessionFlags) *cobra.Command {
	var asJSON bool
	var before int64
	var limit int
	cmd := &cobra.Command{
		Use:   "messages ID [--json]",
		Short: "List a session's stored messages, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			page, err := sessions.ListAgentMessages(cmd.Context(), args[0], client.ListMessagesRequest{BeforeSequence: before, Limit: limit})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, page)
			}
			for _, m := range page.Messages {
				printMessage(g.stdout, m.Sequence, string(m.Role), m.ToolName, m.Text)
			}
			if page.HasMore {
				fmt.Fprintf(g.stdout, "(older messages: --before %d)\n", page.NextBeforeSequence)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page JSON")
	cmd.Flags().Int64Var(&before, "before", 0, "list messages before this sequence")
	cmd.Flags().IntVar(&limit, "limit", 50, "page size (1 to 200)")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printMessage(w io.Writer, seq int64, role, tool, text string) {
	if strings.TrimSpace(text) == "" && role == "assistant" {
		text = "(asks for tool calls)"
	}
	label := role
	if tool != "" {
		label += " " + tool
	}
	fmt.Fprintf(w, "%4d  %-22s %s\n", seq, label, strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n"+strings.Repeat(" ", 29)))
}

func printSnapshot(w io.Writer, s client.Snapshot) {
	fmt.Fprintf(w, "session %s (agent %s)\n", s.SessionID, s.Agent)
	if s.State != nil {
		fmt.Fprintf(w, "status   %s", s.State.Status)
		if s.State.ActiveTurnID != "" {
			fmt.Fprintf(w, " (%s)", s.State.ActiveTurnID)
		}
		fmt.Fprintln(w)
		if s.State.LastTurnError != "" {
			fmt.Fprintf(w, "error    %s\n", s.State.LastTurnError)
		}
	}
	fmt.Fprintf(w, "usage    %d model calls, %d input + %d output tokens\n", s.Usage.ModelCalls, s.Usage.InputTokens, s.Usage.OutputTokens)
	if s.QueuedCount > 0 {
		fmt.Fprintf(w, "queued   %d message(s)\n", s.QueuedCount)
	}
	if len(s.Messages) > 0 {
		fmt.Fprintln(w, "\nmessages")
		for _, m := range s.Messages {
			printMessage(w, m.Sequence, string(m.Role), m.ToolName, m.Text)
		}
	}
	if len(s.ToolCalls) > 0 {
		fmt.Fprintln(w, "\ntool calls of the active turn")
		for _, c := range s.ToolCalls {
			fmt.Fprintf(w, "  %-20s %-20s %-18s %s\n", c.ToolCallID, c.ToolName, c.Status, c.Arguments)
		}
	}
	if len(s.PendingInterrupts) > 0 {
		fmt.Fprintln(w, "\nwaiting for approval")
		for _, in := range s.PendingInterrupts {
			fmt.Fprintf(w, "  %s  %s %s", in.InterruptID, in.ToolName, in.Arguments)
			if in.Deadline != "" {
				fmt.Fprintf(w, "  (deadline %s)", in.Deadline)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "    approve: dex-agent-worker session approve %s %s\n", s.SessionID, in.InterruptID)
		}
	}
}
