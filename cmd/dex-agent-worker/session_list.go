package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func newSessionListCmd(g *globals, f *sessionFlags) *cobra.Command {
	var waitingFor, agent, flowType, pageToken string
	var all, asJSON bool
	var pageSize int
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "list [--waiting-for approval,question] [--agent NAME] [--json]",
		Short: "List sessions, such as every session waiting for a person",
		Long: "list lists running sessions, newest first, from Temporal's visibility store. --waiting-for keeps\n" +
			"the sessions that wait for any of: " + strings.Join(wire.WaitingForKinds(), ", ") + " (comma-separated). --agent keeps\n" +
			"one agent's sessions; its flow type comes from the --config file, else the worker's HTTP API, else\n" +
			"configs/dev.yaml, as for start. With a --config file the list covers its agents and names them.\n" +
			"--all lists closed sessions too. Visibility trails a session by a moment.",
		Example: "  dex-agent-worker session list --waiting-for approval,question\n" +
			"  dex-agent-worker session list --agent orders --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kinds, err := wire.ParseWaitingFor(waitingFor)
			if err != nil {
				return fmt.Errorf("--waiting-for: %w", err)
			}
			if cmd.Flags().Changed("waiting-for") && len(kinds) == 0 {
				return fmt.Errorf("--waiting-for is blank: give one or more of %s", strings.Join(wire.WaitingForKinds(), ", "))
			}
			cfg, err := f.configFile()
			if err != nil {
				return err
			}
			names := map[string]string{} // flow type -> agent name
			var flowTypes []string
			if cfg != nil {
				for _, a := range cfg.Agents {
					names[a.FlowType] = a.Name
					flowTypes = append(flowTypes, a.FlowType)
				}
			}
			switch {
			case flowType != "" && agent != "":
				return errors.New("use --agent or --flow-type, not both")
			case flowType != "":
				flowTypes = []string{flowType}
			case agent != "":
				api.addressSet = cmd.Flags().Changed("http-address")
				if api.token == "" {
					api.token = os.Getenv("DEX_API_TOKEN")
				}
				ft, err := f.flowType(cmd.Context(), agent, api)
				if err != nil {
					return err
				}
				names[ft] = agent
				flowTypes = []string{ft}
			}
			status := wire.ListRunning
			if all {
				status = wire.ListAll
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			page, err := sessions.ListSessions(cmd.Context(), client.ListSessionsOptions{
				WaitingFor: kinds, FlowTypes: flowTypes, Status: status, PageSize: pageSize, PageToken: pageToken,
			})
			if err != nil {
				return err
			}
			for i := range page.Sessions {
				page.Sessions[i].Agent = names[page.Sessions[i].FlowType]
			}
			if asJSON {
				return writeJSON(g.stdout, page)
			}
			printSessionList(g.stdout, page.Sessions)
			if page.NextPageToken != "" {
				more := []string{"--page-token", page.NextPageToken}
				for _, name := range []string{"waiting-for", "agent", "flow-type", "all", "page-size"} {
					if fl := cmd.Flags().Lookup(name); fl.Changed {
						more = append(more, "--"+name+"="+shellQuote(fl.Value.String()))
					}
				}
				fmt.Fprintf(g.stdout, "(more: %s)\n", commandLine(cmd, "list", more...))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&waitingFor, "waiting-for", "", "keep sessions waiting for any of "+strings.Join(wire.WaitingForKinds(), ", ")+" (comma-separated)")
	cmd.Flags().StringVar(&agent, "agent", "", "keep one agent's sessions")
	cmd.Flags().StringVar(&flowType, "flow-type", "", "keep the sessions of this flow type, instead of --agent")
	cmd.Flags().BoolVar(&all, "all", false, "list closed sessions too")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the page JSON")
	cmd.Flags().IntVar(&pageSize, "page-size", wire.DefaultListPageSize, "sessions per page (1 to "+strconv.Itoa(wire.MaxListPageSize)+")")
	cmd.Flags().StringVar(&pageToken, "page-token", "", "continue a list (the token a page printed)")
	cmd.Flags().StringVar(&api.address, "http-address", envOr("DEX_HTTP_ADDRESS", defaultHTTPAddress), "the worker's HTTP API, asked for the agent's flow type ($DEX_HTTP_ADDRESS)")
	cmd.Flags().StringVar(&api.token, "token", "", "API bearer token (default $DEX_API_TOKEN)")
	return cmd
}

// printSessionList prints one line per session: its ID, agent (or flow
// type), what it waits for, status and start.
func printSessionList(w interface{ Write([]byte) (int, error) }, list []wire.SessionSummary) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no sessions")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tWAITING FOR\tSTATUS\tSTARTED")
	for _, s := range list {
		agent := s.Agent
		if agent == "" {
			agent = "(" + s.FlowType + ")"
		}
		waiting := strings.Join(s.WaitingFor, ",")
		if waiting == "" {
			waiting = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.SessionID, agent, waiting, s.Status, s.StartedAt.UTC().Format(time.RFC3339))
	}
	tw.Flush()
}
