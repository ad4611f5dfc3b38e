// Package evalrun replays evaluation cases against a changed agent on an
// embedded engine (eval run): each case runs as a fresh session whose tool
// calls are served from the record and whose approvals and questions get
// the recorded answers, and is compared with its record.
package evalrun

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/devserver"
	"github.com/dex-agents/dex-agent-worker/internal/evals"
	"github.com/dex-agents/dex-agent-worker/internal/steps"
	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// RunOptions configure Run.
type RunOptions struct {
	// Config is the changed agent's worker config; Agent the agent that
	// replays every case.
	Config *config.Config
	Agent  string
	// LiveReads runs the reads the record lacks (Server.LiveReads).
	LiveReads bool
	// DataDir holds the embedded engine's SQLite files and the message
	// store.
	DataDir string
	// ModelCache, when set, answers the model calls it kept and keeps the
	// others (--model-cache).
	ModelCache *evals.ModelCache
	// Address, when set, is a Temporal frontend to replay on instead of
	// an embedded engine, with the config's temporal TLS and API key and
	// Namespace (default the config's). The replays run on a task queue
	// of their own (dex-eval-<random>), so the deployment's workers never
	// take them, and stay there as closed sessions.
	Address   string
	Namespace string
	// CaseTimeout bounds one case's replay (default 5 minutes).
	CaseTimeout time.Duration
	Logger      *slog.Logger
}

// Texts of the messages eval run gives people's side of a session.
const (
	UnrecordedApprovalText = "eval run: the recorded session has no answer for this approval, so it was rejected"
)

// Run replays each case as a fresh session of the changed agent on an
// embedded engine, and compares each with its record. The config runs as
// it is but for what would reach outside: no HTTP API, no notifications,
// no spend hook, no metrics listener or traces, the message store and
// events kept in DataDir. (MCP servers are started: their tools are
// offered to the model; their calls are served from the record.)
func Run(ctx context.Context, o RunOptions, cases []*evals.Case) ([]evals.CaseReport, error) {
	if o.CaseTimeout <= 0 {
		o.CaseTimeout = 5 * time.Minute
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	agent, ok := o.Config.Agent(o.Agent)
	if !ok {
		return nil, fmt.Errorf("the config has no agent %q", o.Agent)
	}
	cfg := *o.Config
	cfg.HTTP.Listen = ""
	cfg.Notifications = nil
	cfg.MessageStore = nil
	cfg.Events = config.Events{}
	cfg.Telemetry = config.Telemetry{}
	cfg.Agents = append([]config.Agent(nil), o.Config.Agents...)
	for i := range cfg.Agents {
		cfg.Agents[i].Notify = nil
		cfg.Agents[i].SpendLimit = nil // the application's spend hook is not told of replays
	}
	cfg.Temporal.Deployment = nil // replays are no version of a deployment
	if o.Address == "" {
		srv, err := devserver.Start(ctx, devserver.Options{DataDir: o.DataDir, Namespace: cfg.Temporal.Namespace,
			KeywordListSearchAttributes: []string{wire.SearchAttributeActiveStepTypes}, Logger: logger.With("component", "devserver")})
		if err != nil {
			return nil, err
		}
		defer func() { _ = srv.Stop() }()
		cfg.Temporal.Address, cfg.Temporal.TLS, cfg.Temporal.APIKey = srv.FrontendAddress(), nil, ""
	} else {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		cfg.Temporal.Address, cfg.Temporal.TaskQueue = o.Address, "dex-eval-"+hex.EncodeToString(b)
		if o.Namespace != "" {
			cfg.Temporal.Namespace = o.Namespace
		}
	}
	tools := &evals.Server{LiveReads: o.LiveReads}
	if o.ModelCache != nil {
		scope, err := cacheScope(o.Config, agent)
		if err != nil {
			return nil, err
		}
		o.ModelCache.Scope = scope
	}
	d, err := daemon.Start(ctx, daemon.Options{Config: &cfg, Logger: logger, MessageStorePath: filepath.Join(o.DataDir, "messages.db"),
		TemporalAddress: cfg.Temporal.Address, Tools: tools, Models: modelCache(o.ModelCache)})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	tc, err := daemon.Dial(ctx, cfg.Temporal, "", logger)
	if err != nil {
		return nil, err
	}
	defer tc.Close()
	sessions := client.New(tc, cfg.Temporal.Namespace, cfg.Temporal.TaskQueue)
	// The replays' long texts, read from the embedded message store.
	st, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(o.DataDir, "messages.db")})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	texts := evals.StoreTexts{Store: st}
	var reports []evals.CaseReport
	for _, c := range cases {
		rep := replayCase(ctx, tc, sessions, tools, texts, agent.FlowType, c, o.CaseTimeout)
		reports = append(reports, rep)
		logger.Info("case replayed", "case", c.Header.SessionID, "status", rep.Status)
		if ctx.Err() != nil {
			return reports, ctx.Err()
		}
	}
	return reports, nil
}

// replayCase drives one session through a case: the recorded user
// messages in order, each once the session is idle, and the recorded
// answers to its approvals and questions. Then it captures the session and
// compares it with the record.
func replayCase(ctx context.Context, tc temporalclient.Client, sessions *client.AgentSessionClient, tools *evals.Server, texts evals.Texts, flowType string, c *evals.Case, timeout time.Duration) evals.CaseReport {
	rep := evals.CaseReport{Case: c.Header.SessionID, Recorded: evals.TotalsOf(c)}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// What people did, in order: their messages and the plans they ran.
	var msgs []evals.Record
	for _, r := range c.Records {
		if r.Type == evals.TypeUserMessage || r.Type == evals.TypeExecutePlan {
			msgs = append(msgs, r)
		}
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	id := "eval-" + hex.EncodeToString(b)
	rep.Session = id
	r := tools.Begin(id, c)
	first := ""
	next := 0
	if len(msgs) > 0 && msgs[0].Type == evals.TypeUserMessage && !msgs[0].PlanMode {
		first, next = msgs[0].Text, 1
	}
	if _, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: flowType, SessionID: id, InitialMessage: first, SessionSettings: c.Header.Settings}); err != nil {
		rep.Status, rep.Error = "failed", "start the session: "+err.Error()
		return rep
	}
	answered := map[string]bool{} // interrupts answered, by session and ID
	want := 0                     // the turn count the session reaches once the last message's turn ran
	if first != "" {
		want = 1
	}
	for {
		if ctx.Err() != nil {
			rep.Status, rep.Error = "timed_out", fmt.Sprintf("the case did not finish within %s", timeout)
			break
		}
		snap, err := sessions.GetAgentSnapshot(ctx, id)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if len(snap.PendingInterrupts) > 0 {
			// Each interrupt is answered once: a sub-agent's stays in the
			// snapshot until its answer reaches the child.
			failed := false
			for _, in := range snap.PendingInterrupts {
				key := in.SessionID + "/" + in.InterruptID
				if answered[key] {
					continue
				}
				answered[key] = true
				if err := answer(ctx, sessions, r, id, in); err != nil && ctx.Err() == nil {
					rep.Status, rep.Error = "failed", err.Error()
					failed = true
				}
			}
			if failed {
				break
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		st := snap.State
		if st == nil || st.Status != wire.StatusWaitingForUserMessage || snap.QueuedCount > 0 || st.TurnCount < want {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if next == len(msgs) {
			break
		}
		m := msgs[next]
		next++
		if m.Type == evals.TypeExecutePlan {
			// The run's own draft, whatever its revision number.
			if snap.Plan == nil || snap.Plan.Status != "draft" {
				r.Depart(evals.Unrecorded{Kind: "execute_plan"})
				continue
			}
			want = st.TurnCount + 1
			if _, err := sessions.ExecutePlan(ctx, id, snap.Plan.Revision); err != nil {
				rep.Status, rep.Error = "failed", "run the draft plan: "+err.Error()
				break
			}
			continue
		}
		want = st.TurnCount + 1
		if _, err := sessions.SendUserMessageWithOptions(ctx, id, m.Text, client.SendOptions{PlanMode: m.PlanMode}); err != nil {
			rep.Status, rep.Error = "failed", "send a recorded message: "+err.Error()
			break
		}
	}
	if _, err := sessions.CloseSession(context.WithoutCancel(ctx), id); err != nil && rep.Error == "" {
		rep.Error = "close the session: " + err.Error()
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer ccancel()
	s, err := evals.FetchSession(cctx, tc, id)
	if err != nil {
		rep.Status, rep.Error = "failed", err.Error()
		return rep
	}
	run, err := evals.Decode(cctx, s, texts, time.Now())
	if err != nil {
		rep.Status, rep.Error = "failed", err.Error()
		return rep
	}
	full := evals.Compare(c, run)
	full.Session, full.Error = id, rep.Error
	r.Finish(&full)
	if rep.Status != "" {
		full.Status = rep.Status
	}
	return full
}

// answer gives an approval or a question its recorded answer, or rejects
// or declines it when the record has none.
func answer(ctx context.Context, sessions *client.AgentSessionClient, r *evals.Replay, id string, in wire.Interrupt) error {
	var err error
	switch in.Kind {
	case wire.InterruptKindApproval:
		req := wire.ResolveInterruptRequest{InterruptID: in.InterruptID, Digest: in.Digest, SessionID: in.SessionID, ResolvedVia: "eval"}
		if rec, ok := r.AnswerApproval(in.ToolName, in.Arguments); ok {
			req.Approved = rec.Approved != nil && *rec.Approved
			req.RejectionMessage = rec.Message
		} else {
			req.RejectionMessage = UnrecordedApprovalText
		}
		_, err = sessions.ResolveInterrupt(ctx, id, req)
	case wire.InterruptKindQuestion:
		rec, ok := r.AnswerQuestion(in.Question)
		if ok && rec.Resolution == wire.QuestionAnswered {
			_, err = sessions.AnswerQuestion(ctx, id, wire.AnswerQuestionRequest{InterruptID: in.InterruptID, Answer: rec.Answer, SessionID: in.SessionID, ResolvedVia: "eval"})
		} else {
			_, err = sessions.ResolveInterrupt(ctx, id, wire.ResolveInterruptRequest{InterruptID: in.InterruptID, SessionID: in.SessionID, ResolvedVia: "eval"})
		}
	default:
		return fmt.Errorf("an interrupt of kind %q", in.Kind)
	}
	if err != nil {
		return fmt.Errorf("answer %s: %w", in.InterruptID, err)
	}
	return nil
}

// modelCache is the daemon's model cache: none when c is nil (a nil
// pointer in the interface would be one).
func modelCache(c *evals.ModelCache) steps.ModelCache {
	if c == nil {
		return nil
	}
	return c
}

// cacheScope is what decides a model call's answer besides its turn: the
// agent's config (its runner_config, prompt and model among it), its
// plugin's config, and the plugin's executable, so that a changed prompt,
// model or runner build never gets the answers kept for another.
func cacheScope(cfg *config.Config, a *config.Agent) (string, error) {
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(struct {
		Agent  *config.Agent
		Plugin config.Plugin
	}{a, cfg.Plugins[a.Runner]}); err != nil {
		return "", fmt.Errorf("the model cache's scope: %w", err)
	}
	if cmd, err := exec.LookPath(cfg.Plugins[a.Runner].Command); err == nil {
		f, err := os.Open(cmd)
		if err != nil {
			return "", fmt.Errorf("the model cache's scope: %w", err)
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return "", fmt.Errorf("the model cache's scope: read %s: %w", cmd, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
