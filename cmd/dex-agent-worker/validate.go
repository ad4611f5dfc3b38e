package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/mcpsource"
	"github.com/dex-agents/dex-agent-worker/internal/runnerhost"
)

// pluginCheckTimeout bounds the start of one plugin, and one Configure.
const pluginCheckTimeout = time.Minute

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Work with config files"}
	var (
		cfgPath string
		offline bool
	)
	validate := &cobra.Command{
		Use:   "validate --config FILE [--offline]",
		Short: "Check a config file, its plugins and every agent's runner_config; exit 1 listing every problem",
		Long: "validate checks the file (every problem with its key path and line), then does what the worker\n" +
			"does at start-up: it starts every plugin an agent uses (its binary must exist, be executable and\n" +
			"match its sha256) and calls Configure for every agent, so a runner_config the plugin refuses is\n" +
			"reported with the plugin's message. It warns about tool_policies that name a tool the agent's\n" +
			"runner does not offer. It lists every MCP server an agent uses, printing each agent's MCP tools\n" +
			"with their effects, and warns about a server that cannot be listed and a policy for an MCP tool\n" +
			"its server does not offer. Exit 1 on any problem; warnings alone exit 0.\n\n" +
			"--offline checks the file only and starts no plugin or MCP server.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				fmt.Fprintf(g.stderr, "%s is not valid:\n%v\n", cfgPath, err)
				return exitError{code: 1}
			}
			checked := "--offline: plugins not started"
			if !offline {
				problems, warnings, lines := checkPlugins(cmd.Context(), cfg, validateLogger(g, cmd))
				mcpLines, mcpWarnings := checkMCPServers(cmd.Context(), cfg, version)
				lines = append(lines, mcpLines...)
				warnings = append(warnings, mcpWarnings...)
				for _, l := range lines {
					fmt.Fprintln(g.stdout, l)
				}
				for _, w := range warnings {
					fmt.Fprintln(g.stderr, "warning:", w)
				}
				if len(problems) > 0 {
					fmt.Fprintf(g.stderr, "%s is not valid:\n%s\n", cfgPath, strings.Join(problems, "\n"))
					return exitError{code: 1}
				}
				checked = "every plugin started and accepted its agents' runner_config"
			}
			fmt.Fprintf(g.stdout, "%s is valid: %d agent(s), %d plugin(s); %s\n", cfgPath, len(cfg.Agents), len(cfg.Plugins), checked)
			return nil
		},
	}
	validate.Flags().StringVar(&cfgPath, "config", "", "config file (required)")
	validate.Flags().BoolVar(&offline, "offline", false, "check the file only; start no plugin")
	_ = validate.MarkFlagRequired("config")
	cmd.AddCommand(validate)
	return cmd
}

// validateLogger is the plugin host's logger: warnings and errors only,
// unless --log-level asks for more, so that plugin output does not bury
// the report.
func validateLogger(g *globals, cmd *cobra.Command) *slog.Logger {
	if !cmd.Flags().Changed("log-level") {
		g.logLevel = "warn"
	}
	return g.logger()
}

// checkPlugins starts every plugin an agent uses and configures every
// agent, as daemon.Start does, and returns the problems (each names the
// plugin or the agent), the warnings, and a line per tool of each agent
// with its effective policy and where it comes from.
func checkPlugins(ctx context.Context, cfg *config.Config, logger *slog.Logger) (problems, warnings, lines []string) {
	h := runnerhost.New(logger)
	defer h.Close()

	used := map[string]bool{}
	for _, a := range cfg.Agents {
		used[a.Runner] = true
	}
	names := make([]string, 0, len(cfg.Plugins))
	for name := range cfg.Plugins {
		names = append(names, name)
	}
	slices.Sort(names)
	started := map[string]bool{}
	for _, name := range names {
		if !used[name] {
			warnings = append(warnings, fmt.Sprintf("plugins.%s: no agent uses this plugin; the worker does not start it", name))
			continue
		}
		p := cfg.Plugins[name]
		lctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
		err := h.Launch(lctx, runnerhost.PluginSpec{Name: name, Command: p.Command, Args: p.Args, Dir: cfg.Dir(), SHA256: p.SHA256, Env: p.Env})
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("plugins.%s: %v", name, err))
			continue
		}
		started[name] = true
	}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		if !started[a.Runner] {
			continue // its plugin's problem is reported
		}
		raw, err := a.RunnerConfigJSON()
		if err != nil {
			problems = append(problems, fmt.Sprintf("agents[%d].runner_config: %v", i, err))
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, pluginCheckTimeout)
		err = h.Configure(cctx, a.Runner, a.Name, raw)
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("agents[%d].runner_config: agent %s: plugin %s refused its runner_config: %v", i, a.Name, a.Runner, err))
			continue
		}
		if _, caps, _ := h.Info(a.Runner); a.Compaction != nil && !caps.Compaction {
			problems = append(problems, fmt.Sprintf("agents[%d].compaction: runner %s does not implement compaction (capability compaction)", i, a.Runner))
		}
		offered := h.Tools(a.Runner, a.Name)
		for _, tool := range a.UnofferedToolPolicies(offered) {
			warnings = append(warnings, fmt.Sprintf("agents[%d].tool_policies.%s: runner %s does not offer a tool %q to agent %s (it offers: %s); the policy never applies",
				i, tool, a.Runner, tool, a.Name, strings.Join(offered, ", ")))
		}
		own, runnerDefault := h.ToolPolicies(a.Runner, a.Name)
		lines = append(lines, policyLines(a, cfg.Plugins[a.Runner].TrustsRunnerPolicies(), offered, own, runnerDefault)...)
	}
	return problems, warnings, lines
}

// mcpPolicySource says where an MCP tool's effective policy comes from.
func mcpPolicySource(a *config.Agent, t mcpsource.Tool) string {
	if _, ok := a.ToolPolicies[t.Name]; ok {
		return fromToolPolicies
	}
	if t.Effect != "" {
		return fromAnnotations
	}
	return fromDefault
}

// mcpCheckTimeout bounds the listing of the MCP servers.
const mcpCheckTimeout = time.Minute

// checkMCPServers lists every MCP server an agent uses, as the worker's
// first model call would, and returns a line per agent with its MCP tools
// and their effects, and the warnings: a server that cannot be listed
// (the worker leaves its tools out), a policy for an MCP tool that its
// server does not offer.
func checkMCPServers(ctx context.Context, cfg *config.Config, version string) (lines, warnings []string) {
	used := map[string]bool{}
	for _, a := range cfg.Agents {
		for _, name := range a.MCP {
			used[name] = true
		}
	}
	if len(used) == 0 {
		return nil, nil
	}
	var servers []mcpsource.Server
	for _, name := range slices.Sorted(maps.Keys(used)) {
		servers = append(servers, daemon.MCPServer(name, cfg.MCPServers[name]))
	}
	var logs strings.Builder
	src, err := mcpsource.New(servers, mcpsource.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
					return slog.Attr{}
				}
				return a
			}})),
		ClientName: "dex-agent-worker", ClientVersion: version,
	})
	if err != nil {
		return nil, []string{"mcp_servers: " + err.Error()}
	}
	defer src.Close()
	lctx, cancel := context.WithTimeout(ctx, mcpCheckTimeout)
	defer cancel()
	if _, err := src.Refresh(lctx); err != nil {
		return nil, []string{"mcp_servers: listing: " + err.Error()}
	}
	for i := range cfg.Agents {
		a := &cfg.Agents[i]
		if len(a.MCP) == 0 {
			continue
		}
		agents := &mcpsource.Agents{Source: src, Servers: map[string][]string{a.Name: a.MCP}, ResourceTools: map[string]bool{a.Name: a.ResourceAndPromptTools}}
		tools, _ := agents.Tools(lctx, a.Name)
		listed := map[string]bool{}
		var described []string
		for _, t := range tools {
			listed[t.Server] = true
			described = append(described, t.Name+" ("+string(t.Policy(daemon.PolicySet(a)).Effect)+", "+mcpPolicySource(a, t)+")")
		}
		for _, srv := range a.MCP {
			if !listed[srv] {
				warnings = append(warnings, fmt.Sprintf("mcp_servers.%s: agent %s gets no tools from it: it could not be listed, or it offers none (the worker leaves it out and tries again later)", srv, a.Name))
			}
		}
		lines = append(lines, fmt.Sprintf("agent %s: %d MCP tool(s): %s", a.Name, len(tools), strings.Join(described, ", ")))
		for _, name := range slices.Sorted(maps.Keys(a.ToolPolicies)) {
			for _, srv := range a.MCP {
				if strings.HasPrefix(name, srv+"__") && listed[srv] && !slices.ContainsFunc(tools, func(t mcpsource.Tool) bool { return t.Name == name }) {
					warnings = append(warnings, fmt.Sprintf("agents[%d].tool_policies.%s: MCP server %s does not offer a tool %q; the policy never applies", i, name, srv, name))
				}
			}
		}
	}
	if text := strings.TrimSpace(logs.String()); text != "" {
		for _, l := range strings.Split(text, "\n") {
			warnings = append(warnings, "mcp: "+l)
		}
	}
	return lines, warnings
}
