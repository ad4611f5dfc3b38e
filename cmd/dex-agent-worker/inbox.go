package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/httpclient"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func newInboxCmd(g *globals) *cobra.Command {
	var address, token, kinds, agent, pageToken string
	var pageSize int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inbox [--kind approval,question] [--agent NAME] [--json]",
		Short: "List every approval and question waiting for a person, across sessions",
		Long: "inbox lists the approvals and questions the sessions of an API token wait on, newest session first,\n" +
			"sub-agents' included (listed through their parent), from the worker's HTTP API. Each comes with the\n" +
			"commands that answer it.",
		Example: "  dex-agent-worker inbox\n  dex-agent-worker inbox --kind approval --agent orders --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv("DEX_API_TOKEN")
			}
			if token == "" {
				return errors.New("no API token: pass --token or set DEX_API_TOKEN")
			}
			c, err := httpclient.New(address, token, nil)
			if err != nil {
				return fmt.Errorf("HTTP API address %q: %w", address, err)
			}
			var ks []string
			for _, k := range strings.Split(kinds, ",") {
				if k = strings.TrimSpace(k); k != "" {
					ks = append(ks, k)
				}
			}
			page, err := c.Inbox(cmd.Context(), httpclient.InboxOptions{Kinds: ks, Agent: agent, PageSize: pageSize, PageToken: pageToken})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, page)
			}
			printInbox(g.stdout, page.Items)
			if page.NextPageToken != "" {
				fmt.Fprintf(g.stdout, "(more: dex-agent-worker inbox --page-token %s)\n", page.NextPageToken)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kinds, "kind", "", "approval, question, or both (comma-separated; default both)")
	cmd.Flags().StringVar(&agent, "agent", "", "keep one agent's sessions")
	cmd.Flags().IntVar(&pageSize, "page-size", wire.DefaultListPageSize, "sessions per page")
	cmd.Flags().StringVar(&pageToken, "page-token", "", "continue the inbox (the token a page printed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page JSON")
	cmd.Flags().StringVar(&address, "http-address", envOr("DEX_HTTP_ADDRESS", defaultHTTPAddress), "the worker's HTTP API ($DEX_HTTP_ADDRESS)")
	cmd.Flags().StringVar(&token, "token", "", "API bearer token (default $DEX_API_TOKEN)")
	return cmd
}

// printInbox prints each waiting approval or question with what answers it.
func printInbox(w io.Writer, items []wire.InboxItem) {
	if len(items) == 0 {
		fmt.Fprintln(w, "nothing waits for a person")
		return
	}
	for _, it := range items {
		title := it.Title
		if title == "" {
			title = it.SessionID
		}
		where := it.SessionID
		if it.HolderSessionID != "" {
			where += " (sub-agent " + it.HolderSessionID + ")"
		}
		fmt.Fprintf(w, "%s · %s · %s\n", it.Agent, title, where)
		if it.Kind == wire.InterruptKindQuestion {
			fmt.Fprintf(w, "  ? %s\n", it.Question)
			for i, c := range it.Choices {
				fmt.Fprintf(w, "    %d. %s\n", i+1, c)
			}
			example := "the answer"
			if len(it.Choices) > 0 {
				example = it.Choices[0]
			}
			fmt.Fprintf(w, "  answer:  dex-agent-worker session answer %s %s %s\n", it.SessionID, it.InterruptID, shellQuote(example))
		} else {
			what := it.ApprovalText
			if what == "" {
				what = strings.TrimSpace(it.ToolName + " " + it.Arguments)
			}
			fmt.Fprintf(w, "  approve? %s\n", what)
			fmt.Fprintf(w, "  approve: dex-agent-worker session approve %s %s\n", it.SessionID, it.InterruptID)
			fmt.Fprintf(w, "  reject:  dex-agent-worker session reject %s %s --message %s\n", it.SessionID, it.InterruptID, shellQuote("the reason"))
		}
		if it.Deadline != "" {
			fmt.Fprintf(w, "  deadline %s\n", it.Deadline)
		}
	}
}
