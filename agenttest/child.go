package agenttest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/daemon"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/steps"
	"github.com/dex-agents/dex-agent-worker/internal/webui"
)

// RunWorkerIfChild runs the worker and exits when this process is a worker
// child that Stack.StartWorker started; otherwise it returns at once. Call it
// first in TestMain:
//
//	func TestMain(m *testing.M) {
//		agenttest.RunWorkerIfChild()
//		os.Exit(m.Run())
//	}
//
// A tool Step of the child stops at the gate "before-start-<tool_name>" when
// the test armed it, before it records that the tool started.
func RunWorkerIfChild() {
	if os.Getenv(envChild) != "worker" {
		return
	}
	os.Exit(runWorkerChild())
}

func runWorkerChild() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg, err := config.Load(os.Getenv(envConfig))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker child:", err)
		return 2
	}
	dir := os.Getenv(envDir)
	ctx, stop := daemon.ShutdownContext(context.Background(), func() {
		fmt.Fprintln(os.Stderr, "worker child: second signal: stopping now")
		os.Exit(3)
	})
	defer stop()
	d, err := daemon.Start(ctx, daemon.Options{
		Config:           cfg,
		Logger:           logger,
		MessageStorePath: filepath.Join(dir, "messages.db"),
		TemporalAddress:  os.Getenv(envAddress),
		ModelQueues:      os.Getenv(envModelQueues),
		WebUI:            webui.Handler(),
		Hooks: steps.Hooks{
			BeforeToolStart: func(ctx context.Context, in session.ToolInput) {
				_ = FileGate{Dir: dir, Name: "before-start-" + in.ToolCall.ToolName}.WaitIfArmed(ctx)
			},
			BeforeMailSend: func(ctx context.Context, channel string) {
				_ = FileGate{Dir: dir, Name: "before-mail-" + channel}.WaitIfArmed(ctx)
			},
			AfterStoreWork: func(ctx context.Context, _ string, w *session.StoreWork, done *session.StoreResult) {
				if len(w.Roll) > 0 {
					_ = FileGate{Dir: dir, Name: fmt.Sprintf("after-roll-%d", w.Roll[0].First)}.WaitIfArmed(ctx)
				}
				if w.RetainFrom > 0 && done.DeletedBefore > 0 {
					_ = FileGate{Dir: dir, Name: "after-retention"}.WaitIfArmed(ctx)
				}
			},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker child:", err)
		return 2
	}
	if err := os.WriteFile(os.Getenv(envReady), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "worker child:", err)
		return 2
	}
	<-ctx.Done()
	d.Stop()
	return 0
}
