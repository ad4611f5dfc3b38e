package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/chat"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// sessionFlags are the session commands' connection flags.
type sessionFlags struct {
	address   string
	namespace string
	taskQueue string
	config    string
	// Temporal TLS and API key, as temporal.tls and temporal.api_key.
	tlsCert, tlsKey, tlsCA, tlsServerName string
	apiKeyEnv                             string

	dataDir    string         // dev's data dir, where its message store is
	loaded     *config.Config // the --config file, once loaded
	loadedPath string
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// configFile returns the worker config that --config (or $DEX_CONFIG)
// names, loaded once, or nil when none is named.
func (f *sessionFlags) configFile() (*config.Config, error) {
	path := f.config
	if path == "" {
		path = os.Getenv("DEX_CONFIG")
	}
	if path == "" {
		return nil, nil
	}
	if f.loaded == nil || f.loadedPath != path {
		cfg, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		f.loaded, f.loadedPath = cfg, path
	}
	return f.loaded, nil
}

// temporal returns the connection settings. Each comes from its flag, else
// its environment variable (address and namespace), else the --config
// file's temporal section, else the default.
func (f *sessionFlags) temporal() (config.Temporal, error) {
	t := config.Temporal{Address: config.DefaultAddress, Namespace: config.DefaultNamespace, TaskQueue: config.DefaultTaskQueue}
	cfg, err := f.configFile()
	if err != nil {
		return t, err
	}
	if cfg != nil {
		t = cfg.Temporal
	}
	if v := os.Getenv("DEX_TEMPORAL_ADDRESS"); v != "" {
		t.Address = v
	}
	if v := os.Getenv("DEX_TEMPORAL_NAMESPACE"); v != "" {
		t.Namespace = v
	}
	for _, o := range []struct{ flag, into *string }{{&f.address, &t.Address}, {&f.namespace, &t.Namespace}, {&f.taskQueue, &t.TaskQueue}} {
		if *o.flag != "" {
			*o.into = *o.flag
		}
	}
	if f.tlsCert != "" || f.tlsKey != "" || f.tlsCA != "" || f.tlsServerName != "" {
		tls := &config.TLS{}
		if t.TLS != nil {
			*tls = *t.TLS
		}
		for _, o := range []struct{ flag, into *string }{{&f.tlsCert, &tls.CertFile}, {&f.tlsKey, &tls.KeyFile}, {&f.tlsCA, &tls.CAFile}, {&f.tlsServerName, &tls.ServerName}} {
			if *o.flag != "" {
				*o.into = *o.flag
			}
		}
		if (tls.CertFile == "") != (tls.KeyFile == "") {
			return t, errors.New("--tls-cert and --tls-key go together (a client certificate and its key)")
		}
		t.TLS = tls
	}
	if f.apiKeyEnv != "" {
		key := os.Getenv(f.apiKeyEnv)
		if key == "" {
			return t, fmt.Errorf("--api-key-env: environment variable %s is not set", f.apiKeyEnv)
		}
		t.APIKey = config.Secret(key)
	}
	return t, nil
}

func (f *sessionFlags) dial(ctx context.Context, g *globals) (*client.AgentSessionClient, func(), error) {
	t, err := f.temporal()
	if err != nil {
		return nil, nil, err
	}
	logger := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := daemon.Dial(ctx, t, "", logger)
	if err != nil {
		if strings.HasPrefix(err.Error(), "connect to Temporal") { // not a TLS file's problem
			err = fmt.Errorf("%w (is `make dev` running? set --address or DEX_TEMPORAL_ADDRESS)", err)
		}
		return nil, nil, err
	}
	sessions := client.New(c, t.Namespace, t.TaskQueue)
	st, err := f.messageStore(ctx)
	switch {
	case err != nil:
		// The workflow still answers; only older pages and long texts
		// need the store.
		fmt.Fprintf(g.stderr, "warning: without the message store, pages hold only the newest messages and long texts cannot be sent: %v\n", err)
	case st != nil:
		sessions = sessions.WithMessages(transcript.Reader{Store: st})
		return sessions, func() { st.Close(); c.Close() }, nil
	}
	return sessions, c.Close, nil
}

// messageStore opens the message store the worker keeps messages in: the
// --config file's message_store, else dev's SQLite file in the data dir
// when it exists. Nil when there is neither.
func (f *sessionFlags) messageStore(ctx context.Context) (transcript.Store, error) {
	o := transcript.Options{Driver: transcript.DriverSQLite}
	cfg, err := f.configFile()
	if err != nil {
		return nil, err
	}
	if ms := cfg.MessageStoreOrNil(); ms != nil {
		o.Driver, o.Path = ms.Driver, ms.Path
		if ms.Driver == config.MessageStorePostgres {
			dsn, err := ms.DSN()
			if err != nil {
				return nil, err
			}
			o.Path, o.DSN = "", dsn.Reveal()
		}
	} else {
		o.Path = filepath.Join(f.dataDir, "messages.db")
		if _, err := os.Stat(o.Path); err != nil {
			return nil, nil // no dev store here
		}
	}
	st, err := transcript.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("open the message store: %w", err)
	}
	return st, nil
}

func newSessionCmd(g *globals) *cobra.Command {
	f := &sessionFlags{}
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Start and drive agent sessions",
		Long: "session starts and drives sessions through Temporal, like any application would.\n\n" +
			"Connection settings come from the flags, else $DEX_TEMPORAL_ADDRESS and $DEX_TEMPORAL_NAMESPACE,\n" +
			"else the temporal section of the worker config named by --config (or $DEX_CONFIG), else the\n" +
			"defaults (localhost:7233, namespace default, task queue dex-agents, no TLS).",
	}
	f.addFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		newSessionStartCmd(g, f),
		withPlanFlag(newSessionSendCmd(g, f), g, f),
		newSessionPlanCmd(g, f), newSessionExecutePlanCmd(g, f),
		newSessionResolveCmd(g, f, true),
		newSessionResolveCmd(g, f, false),
		newSessionAnswerCmd(g, f),
		newSessionSnapshotCmd(g, f),
		newSessionMessagesCmd(g, f),
		newSessionSettingsCmd(g, f),
		newSessionSteerCmd(g, f),
		newSessionDeleteQueuedCmd(g, f),
		newSessionCancelCmd(g, f),
		newSessionCloseCmd(g, f),
		newSessionForkCmd(g, f),
		newSessionEditCmd(g, f),
		newSessionBranchesCmd(g, f),
		newSessionTerminateCmd(g, f),
		newSessionUpgradeCmd(g, f),
		newSessionListCmd(g, f),
	)
	return cmd
}

// addFlags adds the connection flags to fs.
func (f *sessionFlags) addFlags(pf *pflag.FlagSet) {
	pf.StringVar(&f.address, "address", "", "Temporal frontend address (default $DEX_TEMPORAL_ADDRESS, else the config's, else localhost:7233)")
	pf.StringVar(&f.namespace, "namespace", "", "Temporal namespace (default $DEX_TEMPORAL_NAMESPACE, else the config's, else default)")
	pf.StringVar(&f.taskQueue, "task-queue", "", "the workers' task queue (default the config's, else "+wire.DefaultTaskQueue+")")
	pf.StringVar(&f.config, "config", "", "worker config: maps agent names to flow types and gives the Temporal settings (default $DEX_CONFIG)")
	pf.StringVar(&f.tlsCert, "tls-cert", "", "TLS client certificate (PEM) for mTLS, with --tls-key")
	pf.StringVar(&f.tlsKey, "tls-key", "", "TLS client key (PEM)")
	pf.StringVar(&f.tlsCA, "tls-ca", "", "CA certificates (PEM) that verify the server; any --tls-* flag enables TLS")
	pf.StringVar(&f.tlsServerName, "tls-server-name", "", "server name the server's certificate must carry")
	pf.StringVar(&f.dataDir, "data-dir", envOr("DEX_DATA_DIR", ".dex"), "dev's data dir, whose messages.db holds older messages when --config names no message_store (default $DEX_DATA_DIR, else .dex)")
	pf.StringVar(&f.apiKeyEnv, "api-key-env", "", "environment variable that holds a Temporal Cloud API key (enables TLS)")
}

// flowType maps an agent name to its flow type: through the --config file;
// else through the worker's HTTP API (GET /v1/agents) when an API token is
// at hand; else through configs/dev.yaml when it exists.
func (f *sessionFlags) flowType(ctx context.Context, agent string, api apiFlags) (string, error) {
	cfg, err := f.configFile()
	if err != nil {
		return "", err
	}
	if cfg != nil {
		return flowTypeIn(cfg, f.loadedPath, agent)
	}
	if api.token != "" {
		return api.flowType(ctx, agent)
	}
	if api.addressSet {
		return "", errors.New("--http-address needs an API token: pass --token or set DEX_API_TOKEN")
	}
	const devConfig = "configs/dev.yaml"
	if _, err := os.Stat(devConfig); err == nil {
		cfg, err := config.Load(devConfig)
		if err != nil {
			return "", err
		}
		if f.taskQueue == "" {
			f.taskQueue = cfg.Temporal.TaskQueue
		}
		return flowTypeIn(cfg, devConfig, agent)
	}
	return "", fmt.Errorf("cannot map agent %q to its flow type: pass --flow-type TYPE, or --config FILE (the worker's config), "+
		"or an API token (--token or $DEX_API_TOKEN, and --http-address) to ask the worker's HTTP API", agent)
}

// checkFlowType refuses a --flow-type that none of the worker's agents
// has, from the same sources as flowType: a session of it would wait for a
// worker that never comes. With no source at hand it says so on note and
// lets the start go on.
func (f *sessionFlags) checkFlowType(ctx context.Context, flowType string, api apiFlags, note io.Writer) error {
	type agentType struct{ name, flowType string }
	var agents []agentType
	var source string
	cfg, err := f.configFile()
	if err != nil {
		return err
	}
	switch {
	case cfg != nil:
		source = f.loadedPath
	case api.token != "":
		c, err := chat.NewClient(api.address, api.token, nil)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		list, err := c.Agents(actx)
		if err != nil {
			return fmt.Errorf("ask the worker's HTTP API at %s for its agents, to check --flow-type %s: %w (is the worker running with http.listen set? or pass --config)", c.BaseURL(), flowType, err)
		}
		for _, a := range list {
			agents = append(agents, agentType{a.Name, a.FlowType})
		}
		source = "the worker's HTTP API at " + c.BaseURL()
	default:
		const devConfig = "configs/dev.yaml"
		if _, err := os.Stat(devConfig); err != nil {
			fmt.Fprintf(note, "note: cannot check --flow-type %s against the worker's agents: pass --config FILE or an API token (--token or $DEX_API_TOKEN)\n", flowType)
			return nil
		}
		if cfg, err = config.Load(devConfig); err != nil {
			return err
		}
		source = devConfig
	}
	if cfg != nil {
		for _, a := range cfg.Agents {
			agents = append(agents, agentType{a.Name, a.FlowType})
		}
	}
	var known []string
	for _, a := range agents {
		if a.flowType == flowType {
			return nil
		}
		known = append(known, fmt.Sprintf("%s (agent %s)", a.flowType, a.name))
	}
	sort.Strings(known)
	if len(known) == 0 {
		known = []string{"none"}
	}
	return fmt.Errorf("no agent of %s has flow type %q, so no worker would run the session (its flow types: %s)", source, flowType, strings.Join(known, ", "))
}

// flowTypeIn maps an agent name to its flow type through a loaded config.
func flowTypeIn(cfg *config.Config, path, agent string) (string, error) {
	if a, ok := cfg.Agent(agent); ok {
		return a.FlowType, nil
	}
	var names []string
	for _, a := range cfg.Agents {
		names = append(names, a.Name)
	}
	sort.Strings(names)
	return "", fmt.Errorf("%s has no agent %q (it has: %s)", path, agent, strings.Join(names, ", "))
}

// apiFlags say how to reach the worker's HTTP API.
type apiFlags struct {
	address    string
	addressSet bool
	token      string
}

// flowType asks the API for the agent's flow type.
func (a apiFlags) flowType(ctx context.Context, agent string) (string, error) {
	c, err := chat.NewClient(a.address, a.token, nil)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	agents, err := c.Agents(ctx)
	if err != nil {
		return "", fmt.Errorf("ask the worker's HTTP API at %s for agent %q: %w (is the worker running with http.listen set? or pass --flow-type or --config)", c.BaseURL(), agent, err)
	}
	var names []string
	for _, x := range agents {
		if x.Name == agent {
			return x.FlowType, nil
		}
		names = append(names, x.Name)
	}
	sort.Strings(names)
	return "", fmt.Errorf("the worker's HTTP API at %s has no agent %q for this token (it has: %s)", c.BaseURL(), agent, strings.Join(names, ", "))
}

func newSessionStartCmd(g *globals, f *sessionFlags) *cobra.Command {
	var agent, flowType, id, message, requestID, settingsJSON string
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "start --agent NAME [--id ID] [--message TEXT]",
		Short: "Start a session; prints its ID alone on stdout",
		Long: "start starts a session of an agent. The session runs the agent's flow type, which --flow-type\n" +
			"gives directly; otherwise start finds it by the agent's name in the --config file, else by\n" +
			"asking the worker's HTTP API (GET /v1/agents) when an API token is set (--token or\n" +
			"$DEX_API_TOKEN), else in configs/dev.yaml when that file exists.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if flowType == "" {
				if agent == "" {
					return errors.New("pass --agent NAME (or --flow-type TYPE)")
				}
				api.addressSet = cmd.Flags().Changed("http-address")
				if api.token == "" {
					api.token = os.Getenv("DEX_API_TOKEN")
				}
				ft, err := f.flowType(cmd.Context(), agent, api)
				if err != nil {
					return err
				}
				flowType = ft
			} else {
				api.addressSet = cmd.Flags().Changed("http-address")
				if api.token == "" {
					api.token = os.Getenv("DEX_API_TOKEN")
				}
				if err := f.checkFlowType(cmd.Context(), flowType, api, g.stderr); err != nil {
					return err
				}
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			var settings json.RawMessage
			if settingsJSON != "" {
				settings = json.RawMessage(settingsJSON)
			}
			sid, err := sessions.StartSession(cmd.Context(), client.StartSessionOptions{FlowType: flowType, SessionID: id, InitialMessage: message, RequestID: requestID, SessionSettings: settings})
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, sid)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent name")
	cmd.Flags().StringVar(&flowType, "flow-type", "", "the agent's flow type, instead of --agent")
	cmd.Flags().StringVar(&id, "id", "", "session ID (default: a new random ID)")
	cmd.Flags().StringVar(&message, "message", "", "first user message")
	cmd.Flags().StringVar(&requestID, "request-id", "", "makes a retried start idempotent")
	cmd.Flags().StringVar(&settingsJSON, "settings", "", `session settings: one JSON object, such as '{"model":"deep"}'`)
	cmd.Flags().StringVar(&api.address, "http-address", envOr("DEX_HTTP_ADDRESS", defaultHTTPAddress), "the worker's HTTP API, asked for the agent's flow type ($DEX_HTTP_ADDRESS)")
	cmd.Flags().StringVar(&api.token, "token", "", "API bearer token (default $DEX_API_TOKEN)")
	return cmd
}

func newSessionSendCmd(g *globals, f *sessionFlags) *cobra.Command {
	var mode string
	cmd := &cobra.Command{
		Use:   "send ID TEXT",
		Short: "Send a user message",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := wire.CheckSendMode(mode); err != nil {
				return err
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			ok, err := sessions.SendUserMessageWithOptions(cmd.Context(), args[0], args[1], client.SendOptions{Mode: mode})
			if err != nil {
				return err
			}
			switch {
			case !ok && mode == wire.SendModeRejectIfBusy:
				return errors.New("the session is busy (a turn runs or messages wait), so the message was not sent (--mode reject_if_busy)")
			case !ok:
				return errors.New("the session refused the message (blank, too long to send inline, or its queue is full)")
			}
			switch mode {
			case wire.SendModeSteer:
				fmt.Fprintln(g.stdout, "steered")
			case wire.SendModeInterrupt:
				fmt.Fprintln(g.stdout, "sent; the running turn is cancelled")
			default:
				fmt.Fprintln(g.stdout, "queued")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&mode, "mode", "", "what happens while a turn runs: queue (default), steer, interrupt (cancel the turn and answer this instead), reject_if_busy")
	return cmd
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
			ok, err := sessions.ResolveInterrupt(cmd.Context(), args[0], wire.ResolveInterruptRequest{InterruptID: args[1], Approved: approve, RejectionMessage: message})
			if err != nil {
				return err
			}
			if !ok {
				action := client.Approve
				if !approve {
					action = client.Reject
				}
				return fmt.Errorf("interrupt %s was not %s: %s", args[1], map[bool]string{true: "approved", false: "rejected"}[approve],
					whyNotResolved(cmd.Context(), sessions, args[0], args[1], action, ""))
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

// whyNotResolved reads the session's snapshot to say why an interrupt took
// no answer (client.WhyNotResolved).
func whyNotResolved(ctx context.Context, sessions *client.AgentSessionClient, id, interruptID string, action client.InterruptAction, answer string) string {
	snap, err := sessions.GetAgentSnapshot(ctx, id)
	if err != nil {
		return "it is not pending (the session's snapshot, which would say why, could not be read: " + err.Error() + ")"
	}
	return client.WhyNotResolved(snap, interruptID, action, answer, time.Now())
}

func newSessionAnswerCmd(g *globals, f *sessionFlags) *cobra.Command {
	var decline bool
	cmd := &cobra.Command{
		Use:   "answer ID INTERRUPT_ID (ANSWER | --decline)",
		Short: "Answer a question the model asked (ask_user), or decline it",
		Long: "answer answers a pending question with ANSWER, which must be one of the question's choices\n" +
			"unless it takes free text (one without choices always does). --decline declines it: the model\n" +
			"is told the user declined to answer.",
		Example: "  dex-agent-worker session answer ID call_1_0 'order 7: office chair ($62.50 left)'\n" +
			"  dex-agent-worker session answer ID call_1_0 --decline",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case decline && len(args) != 2:
				return fmt.Errorf("with --decline, give ID and INTERRUPT_ID only")
			case !decline && len(args) != 3:
				return fmt.Errorf("give ID, INTERRUPT_ID and the ANSWER, or --decline")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			var ok bool
			if decline {
				ok, err = sessions.ResolveInterrupt(cmd.Context(), args[0], wire.ResolveInterruptRequest{InterruptID: args[1]})
			} else {
				ok, err = sessions.AnswerQuestion(cmd.Context(), args[0], wire.AnswerQuestionRequest{InterruptID: args[1], Answer: args[2]})
			}
			switch {
			case err != nil:
				return err
			case !ok && decline:
				return fmt.Errorf("question %s was not declined: %s", args[1], whyNotResolved(cmd.Context(), sessions, args[0], args[1], client.Reject, ""))
			case !ok:
				return fmt.Errorf("the answer was not taken: %s", whyNotResolved(cmd.Context(), sessions, args[0], args[1], client.Answer, args[2]))
			case decline:
				fmt.Fprintln(g.stdout, "declined")
			default:
				fmt.Fprintln(g.stdout, "answered")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&decline, "decline", false, "decline the question instead of answering it")
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
			if err := sessions.CompleteMessages(cmd.Context(), args[0], snap.Messages); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, snap)
			}
			printSnapshot(g.stdout, snap, func(sub string, args ...string) string { return commandLine(cmd, sub, args...) })
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
			page, err := sessions.ListAgentMessages(cmd.Context(), args[0], wire.ListMessagesRequest{BeforeSequence: before, Limit: limit})
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
				more := []string{args[0], "--before", strconv.FormatInt(page.NextBeforeSequence, 10)}
				if cmd.Flags().Changed("limit") {
					more = append(more, "--limit", strconv.Itoa(limit))
				}
				fmt.Fprintf(g.stdout, "(older messages: %s)\n", commandLine(cmd, "messages", more...))
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

// commandLine returns a session command line that repeats the connection
// flags this invocation was given, so a hint copied from its output reaches
// the same session.
func commandLine(cmd *cobra.Command, sub string, args ...string) string {
	parts := append([]string{"dex-agent-worker", "session", sub}, args...)
	for _, name := range []string{"address", "namespace", "task-queue", "config", "tls-cert", "tls-key", "tls-ca", "tls-server-name", "api-key-env"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			parts = append(parts, "--"+name, shellQuote(fl.Value.String()))
		}
	}
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// statusLine says what the session does. While it runs tools the words say
// which calls run and which wait for an answer; the spec's status value
// (state.status in the JSON) follows in brackets.
func statusLine(s wire.Snapshot) string {
	st := s.State
	turn := ""
	if st.ActiveTurnID != "" {
		turn = st.ActiveTurnID
	}
	if st.Status != wire.StatusRunningTools {
		if turn != "" {
			return fmt.Sprintf("%s (%s)", st.Status, turn)
		}
		return st.Status
	}
	var parts, running, other []string
	for _, c := range s.ToolCalls {
		switch {
		case c.Status == wire.ToolCallApproved:
			running = append(running, fmt.Sprintf("%s (%s)", c.ToolName, c.ToolCallID))
		case c.Status == wire.ToolCallAwaitingApproval || c.Status == wire.ToolCallAwaitingAnswer || c.Status.Final():
		case c.Status == wire.ToolCallWaitingForTimer && c.WaitUntil != "":
			other = append(other, fmt.Sprintf("%s (%s) until %s", c.ToolName, c.ToolCallID, c.WaitUntil))
		default:
			other = append(other, fmt.Sprintf("%s (%s) %s", c.ToolName, c.ToolCallID, c.Status))
		}
	}
	if len(running) > 0 {
		parts = append(parts, "running "+strings.Join(running, ", "))
	}
	waiting := map[string][]string{}
	var kinds []string
	for _, in := range s.PendingInterrupts {
		kind := in.Kind
		if kind == "" {
			kind = wire.InterruptKindApproval
		}
		w := fmt.Sprintf("%s (%s)", in.ToolName, in.ToolCallID)
		if in.Deadline != "" {
			w += ", deadline " + in.Deadline
		}
		if waiting[kind] == nil {
			kinds = append(kinds, kind)
		}
		waiting[kind] = append(waiting[kind], w)
	}
	for _, kind := range kinds {
		parts = append(parts, "waiting for "+kind+": "+strings.Join(waiting[kind], "; "))
	}
	if len(other) > 0 {
		parts = append(parts, "waiting: "+strings.Join(other, ", "))
	}
	bracket := st.Status
	if turn != "" {
		bracket += ", " + turn
	}
	if len(parts) == 0 {
		return bracket
	}
	return strings.Join(parts, "; ") + "  [" + bracket + "]"
}

// printSnapshot prints a snapshot for people; command builds the hints'
// command lines (see commandLine).
func printSnapshot(w io.Writer, s wire.Snapshot, command func(sub string, args ...string) string) {
	fmt.Fprintf(w, "session %s (agent %s)\n", s.SessionID, s.Agent)
	if s.State != nil {
		fmt.Fprintf(w, "status   %s\n", statusLine(s))
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
	if s.SubAgent != nil {
		fmt.Fprintf(w, "parent   %s (sub-agent %s, call %s)\n", s.SubAgent.ParentSessionID, s.SubAgent.Name, s.SubAgent.ToolCallID)
	}
	for _, c := range s.SubAgents {
		fmt.Fprintf(w, "sub-agent %s: %s (%s, call %s)\n", c.Name, c.SessionID, c.Mode, c.ToolCallID)
	}
	if len(s.ToolCalls) > 0 {
		fmt.Fprintln(w, "\ntool calls of the active turn")
		for _, c := range s.ToolCalls {
			fmt.Fprintf(w, "  %-20s %-20s %-18s %s\n", c.ToolCallID, c.ToolName, c.Status, c.Arguments)
		}
	}
	var approvals, questions []wire.Interrupt
	for _, in := range s.PendingInterrupts {
		if in.Kind == wire.InterruptKindQuestion {
			questions = append(questions, in)
		} else {
			approvals = append(approvals, in)
		}
	}
	if len(questions) > 0 {
		fmt.Fprintln(w, "\nwaiting for an answer")
		for _, in := range questions {
			fmt.Fprintf(w, "  %s\n", in.Question)
			for i, c := range in.Choices {
				fmt.Fprintf(w, "    %d. %s\n", i+1, c)
			}
			fmt.Fprintf(w, "    call %s", in.ToolCallID)
			if in.SessionID != "" && in.SessionID != s.SessionID {
				fmt.Fprintf(w, ", sub-agent %s", in.SessionID)
			}
			if in.Deadline != "" {
				fmt.Fprintf(w, ", deadline %s", in.Deadline)
			}
			if len(in.Choices) > 0 && in.AllowsFreeText {
				fmt.Fprint(w, ", other answers allowed")
			}
			fmt.Fprintln(w)
			example := "the answer"
			if len(in.Choices) > 0 {
				example = in.Choices[0]
			}
			fmt.Fprintf(w, "    answer:  %s\n", command("answer", s.SessionID, in.InterruptID, shellQuote(example)))
			fmt.Fprintf(w, "    decline: %s\n", command("answer", s.SessionID, in.InterruptID, "--decline"))
		}
	}
	if len(approvals) > 0 {
		fmt.Fprintln(w, "\nwaiting for approval")
		for _, in := range approvals {
			fmt.Fprintf(w, "  %s %s\n", in.ToolName, in.Arguments)
			fmt.Fprintf(w, "    call %s", in.ToolCallID)
			if in.InterruptID != in.ToolCallID {
				fmt.Fprintf(w, ", interrupt %s", in.InterruptID)
			}
			if in.SessionID != "" && in.SessionID != s.SessionID {
				fmt.Fprintf(w, ", sub-agent %s", in.SessionID)
			}
			if in.Deadline != "" {
				fmt.Fprintf(w, ", deadline %s", in.Deadline)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "    approve: %s\n", command("approve", s.SessionID, in.InterruptID))
			fmt.Fprintf(w, "    reject:  %s\n", command("reject", s.SessionID, in.InterruptID, "--message", shellQuote("the reason the model sees")))
		}
	}
}

func newSessionSettingsCmd(g *globals, f *sessionFlags) *cobra.Command {
	var sets, unsets []string
	var file string
	var clear bool
	cmd := &cobra.Command{
		Use:   "settings ID [--set KEY=VALUE]... [--unset KEY]... | --json FILE | --clear",
		Short: "Show or change the session settings the next turn starts with",
		Long: "settings prints a session's settings (the next turn's) as JSON. --set KEY=VALUE and --unset KEY\n" +
			"change single keys and keep the others (VALUE is JSON when it parses as JSON, else a string);\n" +
			"--json FILE replaces them all with the object in FILE (- for stdin); --clear removes them all.\n" +
			"A running turn keeps the settings it started with. At most 16 KiB of compact JSON.",
		Example: "  dex-agent-worker session settings ID --set model=deep\n" +
			"  dex-agent-worker session settings ID --json settings.json",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes := 0
			for _, on := range []bool{len(sets)+len(unsets) > 0, file != "", clear} {
				if on {
					changes++
				}
			}
			if changes > 1 {
				return errors.New("use one of --set/--unset, --json and --clear")
			}
			sessions, closeFn, err := f.dial(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer closeFn()
			snap, err := sessions.GetAgentSnapshot(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var next json.RawMessage
			switch {
			case changes == 0:
				return writeJSON(g.stdout, snap.SessionSettings)
			case clear:
				next = json.RawMessage("{}")
			case file != "":
				var b []byte
				if file == "-" {
					b, err = io.ReadAll(cmd.InOrStdin())
				} else {
					b, err = os.ReadFile(file)
				}
				if err != nil {
					return err
				}
				next = b
			default:
				settings := map[string]json.RawMessage{}
				if len(snap.SessionSettings) > 0 {
					if err := json.Unmarshal(snap.SessionSettings, &settings); err != nil {
						return fmt.Errorf("the session's settings are not an object: %w", err)
					}
				}
				for _, kv := range sets {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return fmt.Errorf("--set %q: want KEY=VALUE", kv)
					}
					if json.Valid([]byte(v)) {
						settings[k] = json.RawMessage(v)
					} else {
						settings[k], _ = json.Marshal(v)
					}
				}
				for _, k := range unsets {
					delete(settings, k)
				}
				if next, err = json.Marshal(settings); err != nil {
					return err
				}
			}
			ok, err := sessions.UpdateSessionSettings(cmd.Context(), args[0], next)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("the session did not take the settings (it has not started)")
			}
			text, _ := wire.CompactSessionSettings(next)
			if text == "" {
				text = "{}"
			}
			fmt.Fprintln(g.stdout, text)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "set KEY to VALUE (JSON, or a string)")
	cmd.Flags().StringArrayVar(&unsets, "unset", nil, "remove KEY")
	cmd.Flags().StringVar(&file, "json", "", "replace the settings with the JSON object in FILE (- for stdin)")
	cmd.Flags().BoolVar(&clear, "clear", false, "remove every setting")
	return cmd
}
