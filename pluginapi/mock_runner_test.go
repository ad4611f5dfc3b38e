package pluginapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
)

// mockRunner is a Runner made of function fields (nomad's MockPlugin
// style). It implements no optional interface.
type mockRunner struct {
	InfoF                    func(context.Context) (*InfoResponse, error)
	ConfigureF               func(context.Context, *ConfigureRequest) (*ConfigureResponse, error)
	BuildUserMessageF        func(context.Context, *BuildUserMessageRequest) (*BuildUserMessageResponse, error)
	RunModelStepF            func(context.Context, *RunModelStepRequest) (*RunModelStepResponse, error)
	ExecuteDeferredToolCallF func(context.Context, *ExecuteToolRequest) (*ExecuteToolResponse, error)
}

func (m *mockRunner) Info(ctx context.Context, _ *InfoRequest) (*InfoResponse, error) {
	if m.InfoF == nil {
		return &InfoResponse{Name: "mock", Version: "0.0.1"}, nil
	}
	return m.InfoF(ctx)
}

func (m *mockRunner) Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error) {
	return m.ConfigureF(ctx, req)
}

func (m *mockRunner) BuildUserMessage(ctx context.Context, req *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
	return m.BuildUserMessageF(ctx, req)
}

func (m *mockRunner) RunModelStep(ctx context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
	return m.RunModelStepF(ctx, req)
}

func (m *mockRunner) ExecuteDeferredToolCall(ctx context.Context, req *ExecuteToolRequest) (*ExecuteToolResponse, error) {
	return m.ExecuteDeferredToolCallF(ctx, req)
}

// mockFullRunner adds every optional interface to mockRunner.
type mockFullRunner struct {
	mockRunner
	BuildUnfinishedTurnMessagesF func(context.Context, *TurnContext) ([]FrameworkMessage, error)
	PollToolTaskF                func(context.Context, *PollToolTaskRequest) (*ExecuteToolResponse, error)
	CancelToolTaskF              func(context.Context, *CancelToolTaskRequest) error
	EstimateInputTokensF         func(context.Context, *TurnContext) (int64, error)
	SelectCompactionCutoffF      func(context.Context, *CompactionCutoffRequest) (*CompactionCutoffResponse, error)
	SummarizeContextF            func(context.Context, *SummarizeContextRequest) (*SummarizeContextResponse, error)
}

func (m *mockFullRunner) BuildUnfinishedTurnMessages(ctx context.Context, req *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error) {
	msgs, err := m.BuildUnfinishedTurnMessagesF(ctx, &req.Turn)
	if err != nil {
		return nil, err
	}
	return &BuildUnfinishedTurnMessagesResponse{Messages: msgs}, nil
}

func (m *mockFullRunner) PollToolTask(ctx context.Context, req *PollToolTaskRequest) (*ExecuteToolResponse, error) {
	return m.PollToolTaskF(ctx, req)
}

func (m *mockFullRunner) CancelToolTask(ctx context.Context, req *CancelToolTaskRequest) (*CancelToolTaskResponse, error) {
	if err := m.CancelToolTaskF(ctx, req); err != nil {
		return nil, err
	}
	return &CancelToolTaskResponse{}, nil
}

func (m *mockFullRunner) EstimateInputTokens(ctx context.Context, req *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error) {
	n, err := m.EstimateInputTokensF(ctx, &req.Turn)
	if err != nil {
		return nil, err
	}
	return &EstimateInputTokensResponse{InputTokens: n}, nil
}

func (m *mockFullRunner) SelectCompactionCutoff(ctx context.Context, req *CompactionCutoffRequest) (*CompactionCutoffResponse, error) {
	return m.SelectCompactionCutoffF(ctx, req)
}

func (m *mockFullRunner) SummarizeContext(ctx context.Context, req *SummarizeContextRequest) (*SummarizeContextResponse, error) {
	return m.SummarizeContextF(ctx, req)
}

// Interface guards
var (
	_ Runner                       = (*mockRunner)(nil)
	_ UnfinishedTurnMessageBuilder = (*mockFullRunner)(nil)
	_ ToolTaskPoller               = (*mockFullRunner)(nil)
	_ ToolTaskCanceller            = (*mockFullRunner)(nil)
	_ InputTokenEstimator          = (*mockFullRunner)(nil)
	_ Compactor                    = (*mockFullRunner)(nil)
)

// connect serves r through the real gRPC shims over a local connection and
// returns the host-side client that RunnerPlugin dispenses.
func connect(t testing.TB, r Runner) (*grpcClient, *plugin.GRPCServer) {
	t.Helper()
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{
		PluginName: &RunnerPlugin{Runner: r},
	})
	t.Cleanup(func() {
		// Stop the server first: client.Close asks the server to stop
		// itself, and go-plugin's GRPCServer.Stop is not safe to run twice
		// at once.
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := raw.(*grpcClient)
	if !ok {
		t.Fatalf("Dispense returned %T", raw)
	}
	return c, server
}

// recorder is a host-side ToolEventWriter that logs every write in order.
type recorder struct {
	mu     sync.Mutex
	writes []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, s)
}

func (r *recorder) WriteTextDelta(text string)      { r.add("text " + text) }
func (r *recorder) WriteReasoningDelta(text string) { r.add("reasoning " + text) }
func (r *recorder) Heartbeat()                      { r.add("heartbeat") }
func (r *recorder) SaveHeartbeatCheckpoint(text string) {
	r.add("checkpoint " + text)
}

func (r *recorder) WriteEvent(eventType string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	r.add(fmt.Sprintf("event %s %s", eventType, b))
	return nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.writes...)
}
