package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/chat"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Plans from the command line: `session send --plan` starts a planning turn
// (plan mode), `session plan` shows the session's plan as a checklist, and
// `session execute-plan` runs the draft the user approved.

// withPlanFlag adds --plan to the send command: the message then starts a
// planning turn, in which the model may only write the plan (write_todos)
// for the user to review and run with execute-plan.
func withPlanFlag(send *cobra.Command, g *globals, f *sessionFlags) *cobra.Command {
	var plan bool
	send.Use = "send ID TEXT [--plan]"
	send.Long = "send queues a user message; the session answers it in its next turn.\n\n" +
		"--plan sends it in plan mode: the turn may only write a plan (write_todos), which `session plan`\n" +
		"shows and `session execute-plan` runs. Any message while a draft plan exists revises the draft.\n" +
		"Plan mode needs plan_mode_enabled: true and write_todos in the agent's built_in_tools."
	send.Example = "  dex-agent-worker session send ID 'refund order 7'\n" +
		"  dex-agent-worker session send --plan ID 'refund orders 3 and 7'"
	send.Flags().BoolVar(&plan, "plan", false, "send in plan mode: the turn drafts a plan instead of acting")
	plain := send.RunE
	send.RunE = func(cmd *cobra.Command, args []string) error {
		if !plan {
			return plain(cmd, args)
		}
		sessions, closeFn, err := f.dial(cmd.Context(), g)
		if err != nil {
			return err
		}
		defer closeFn()
		mode, _ := cmd.Flags().GetString("mode")
		ok, err := sessions.SendUserMessageWithOptions(cmd.Context(), args[0], args[1], client.SendOptions{PlanMode: true, Mode: mode})
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("the session refused the planning message: plan mode is off for this agent (the worker config's " +
				"plan_mode_enabled, with write_todos in built_in_tools), or the text is blank or its queue is full")
		}
		fmt.Fprintln(g.stdout, "queued (plan mode)")
		return nil
	}
	return send
}

func newSessionPlanCmd(g *globals, f *sessionFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan ID [--json]",
		Short: "Show a session's plan as a checklist: [ ] pending, [~] in progress, [x] completed",
		Long: "plan prints the session's plan (what write_todos wrote last): its revision, its status (draft,\n" +
			"active, completed or cleared) and each task. --json prints snapshot.plan, or null before the\n" +
			"first plan.",
		Args: cobra.ExactArgs(1),
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
				return writeJSON(g.stdout, snap.Plan)
			}
			printPlan(g.stdout, snap, func(sub string, args ...string) string { return commandLine(cmd, sub, args...) })
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print snapshot.plan as JSON")
	return cmd
}

// printPlan prints the session's plan for people, with the commands that
// run or revise a draft; command builds them (see commandLine).
func printPlan(w io.Writer, s wire.Snapshot, command func(sub string, args ...string) string) {
	p := s.Plan
	if p == nil {
		fmt.Fprintf(w, "session %s has no plan yet: the agent writes one with write_todos (plan mode: %s)\n",
			s.SessionID, command("send", "--plan", s.SessionID, shellQuote("what to plan")))
		return
	}
	done, running := 0, 0
	for _, t := range p.Tasks {
		switch t.Status {
		case chat.TaskCompleted:
			done++
		case chat.TaskInProgress:
			running++
		}
	}
	counts := "no tasks"
	if len(p.Tasks) > 0 {
		counts = fmt.Sprintf("%d of %d tasks completed", done, len(p.Tasks))
		if running > 0 {
			counts += fmt.Sprintf(", %d in progress", running)
		}
	}
	fmt.Fprintf(w, "plan of session %s: revision %d, %s (%s)\n", s.SessionID, p.Revision, p.Status, counts)
	for _, t := range p.Tasks {
		fmt.Fprintf(w, "  %s %s\n", chat.TaskBox(t.Status), t.Content)
	}
	executing := s.State != nil && s.State.ActiveTurnID != "" && s.State.InteractionMode == wire.InteractionExecuting
	switch {
	case executing:
		fmt.Fprintf(w, "executing in %s\n", s.State.ActiveTurnID)
	case p.Status == chat.PlanDraft && s.State != nil && s.State.ActiveTurnID != "":
		// The session takes execute_plan only between turns: the turn that
		// wrote the draft may still be writing its answer.
		fmt.Fprintf(w, "execute: %s  (once %s ends)\n", command("execute-plan", s.SessionID, "--revision", fmt.Sprint(p.Revision)), s.State.ActiveTurnID)
		fmt.Fprintf(w, "revise:  %s\n", command("send", s.SessionID, shellQuote("what to change")))
	case p.Status == chat.PlanDraft:
		fmt.Fprintf(w, "execute: %s\n", command("execute-plan", s.SessionID, "--revision", fmt.Sprint(p.Revision)))
		fmt.Fprintf(w, "revise:  %s\n", command("send", s.SessionID, shellQuote("what to change")))
	}
}

func newSessionExecutePlanCmd(g *globals, f *sessionFlags) *cobra.Command {
	var revision int
	cmd := &cobra.Command{
		Use:   "execute-plan ID [--revision N]",
		Short: "Run the session's draft plan (execute_plan): an executing turn carries it out",
		Long: "execute-plan approves a plan revision and starts the turn that carries it out, with every tool.\n" +
			"Without --revision it runs the current plan, which must be a draft or active. The session takes it\n" +
			"only while it waits for a user message with nothing queued, and only the current revision.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := cmd.Flags().Changed("revision")
			if set && revision < 1 {
				return fmt.Errorf("--revision %d: a plan revision is 1 or more", revision)
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			id := args[0]
			if !set {
				snap, err := sessions.GetAgentSnapshot(cmd.Context(), id)
				if err != nil {
					return err
				}
				if revision, err = planToExecute(snap); err != nil {
					return err
				}
			}
			ok, err := sessions.ExecutePlan(cmd.Context(), id, revision)
			if err != nil {
				return err
			}
			if !ok {
				snap, err := sessions.GetAgentSnapshot(cmd.Context(), id)
				if err != nil {
					return fmt.Errorf("the session did not execute plan revision %d (and its snapshot did not load: %w)", revision, err)
				}
				return errors.New(executeRefusal(snap, revision))
			}
			fmt.Fprintf(g.stdout, "executing plan revision %d\n", revision)
			return nil
		},
	}
	cmd.Flags().IntVar(&revision, "revision", 0, "the plan revision to run (default: the current draft's or active plan's)")
	return cmd
}

// planToExecute is the revision execute-plan runs without --revision: the
// current plan's, when it is a draft or active.
func planToExecute(s wire.Snapshot) (int, error) {
	p := s.Plan
	switch {
	case p == nil:
		return 0, fmt.Errorf("session %s has no plan to execute: draft one first with `session send --plan %s TEXT`", s.SessionID, s.SessionID)
	case p.Status != chat.PlanDraft && p.Status != chat.PlanActive:
		return 0, fmt.Errorf("session %s has no draft or active plan to execute: its plan (revision %d) is %s", s.SessionID, p.Revision, p.Status)
	}
	return p.Revision, nil
}

// executeRefusal says why execute_plan answered false, from the snapshot
// loaded after it.
func executeRefusal(s wire.Snapshot, revision int) string {
	return fmt.Sprintf("the session did not execute plan revision %d: %s", revision, chat.PlanRefusal(s, revision))
}
