package pluginapi

// This file is the one place that converts between the Go contract and the
// wire messages of pluginapi/internal/runnerpb (terraform-plugin-go keeps
// the same split in its fromproto and toproto packages; here the converters
// must live in package pluginapi, because Serve needs them and they need the
// contract's types). toProto* builds wire messages; fromProto* reads them and
// treats a missing message as the zero value. Empty slices and maps become
// nil in both directions, so a round trip is exact.

import (
	"encoding/json"

	"github.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb"
)

func toProtoCapabilities(c Capabilities) *runnerpb.Capabilities {
	return &runnerpb.Capabilities{
		UnfinishedTurnMessages: c.UnfinishedTurnMessages,
		ToolTaskPolling:        c.ToolTaskPolling,
		ToolTaskCancelling:     c.ToolTaskCancelling,
		InputTokenEstimation:   c.InputTokenEstimation,
		Compaction:             c.Compaction,
		TranscriptCache:        c.TranscriptCache,
	}
}

func fromProtoCapabilities(c *runnerpb.Capabilities) Capabilities {
	return Capabilities{
		UnfinishedTurnMessages: c.GetUnfinishedTurnMessages(),
		ToolTaskPolling:        c.GetToolTaskPolling(),
		ToolTaskCancelling:     c.GetToolTaskCancelling(),
		InputTokenEstimation:   c.GetInputTokenEstimation(),
		Compaction:             c.GetCompaction(),
		TranscriptCache:        c.GetTranscriptCache(),
	}
}

func toProtoProtocolVersions(vs []int) []int32 {
	if len(vs) == 0 {
		return nil
	}
	out := make([]int32, len(vs))
	for i, v := range vs {
		out[i] = int32(v)
	}
	return out
}

func fromProtoProtocolVersions(vs []int32) []int {
	if len(vs) == 0 {
		return nil
	}
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}

func toProtoConfigure(r *ConfigureRequest) *runnerpb.ConfigureRequest {
	return &runnerpb.ConfigureRequest{
		Agent:           r.Agent,
		RunnerConfig:    string(r.RunnerConfig),
		ProtocolVersion: int32(r.ProtocolVersion),
	}
}

func fromProtoConfigure(r *runnerpb.ConfigureRequest) *ConfigureRequest {
	var cfg []byte
	if s := r.GetRunnerConfig(); s != "" {
		cfg = []byte(s)
	}
	return &ConfigureRequest{
		Agent:           r.GetAgent(),
		RunnerConfig:    cfg,
		ProtocolVersion: int(r.GetProtocolVersion()),
	}
}

func toProtoConfigureResponse(r *ConfigureResponse) *runnerpb.ConfigureResponse {
	out := &runnerpb.ConfigureResponse{Tools: nilIfEmpty(r.Tools), DefaultToolEffect: string(r.DefaultToolEffect)}
	for _, c := range r.SettingChoices {
		out.SettingChoices = append(out.SettingChoices, &runnerpb.SettingChoice{Key: c.Key, Values: nilIfEmpty(c.Values), Default: c.Default})
	}
	if len(r.ToolPolicies) > 0 {
		out.ToolPolicies = make(map[string]*runnerpb.ToolPolicy, len(r.ToolPolicies))
		for name, p := range r.ToolPolicies {
			out.ToolPolicies[name] = toProtoToolPolicy(p)
		}
	}
	return out
}

func fromProtoConfigureResponse(r *runnerpb.ConfigureResponse) *ConfigureResponse {
	out := &ConfigureResponse{Tools: nilIfEmpty(r.GetTools()), DefaultToolEffect: Effect(r.GetDefaultToolEffect())}
	for _, c := range r.GetSettingChoices() {
		out.SettingChoices = append(out.SettingChoices, SettingChoice{Key: c.GetKey(), Values: nilIfEmpty(c.GetValues()), Default: c.GetDefault()})
	}
	if ps := r.GetToolPolicies(); len(ps) > 0 {
		out.ToolPolicies = make(map[string]ToolPolicy, len(ps))
		for name, p := range ps {
			out.ToolPolicies[name] = fromProtoToolPolicy(p)
		}
	}
	return out
}

func toProtoToolPolicy(p ToolPolicy) *runnerpb.ToolPolicy {
	out := &runnerpb.ToolPolicy{Effect: string(p.Effect)}
	if p.RequiresApproval != nil {
		v := *p.RequiresApproval
		out.RequiresApproval = &v
	}
	return out
}

func fromProtoToolPolicy(p *runnerpb.ToolPolicy) ToolPolicy {
	out := ToolPolicy{Effect: Effect(p.GetEffect())}
	if p != nil && p.RequiresApproval != nil {
		v := *p.RequiresApproval
		out.RequiresApproval = &v
	}
	return out
}

func toProtoPolicySet(s PolicySet) *runnerpb.PolicySet {
	out := &runnerpb.PolicySet{DefaultEffect: string(s.DefaultEffect)}
	if len(s.Policies) > 0 {
		out.Policies = make(map[string]*runnerpb.ToolPolicy, len(s.Policies))
		for name, p := range s.Policies {
			out.Policies[name] = toProtoToolPolicy(p)
		}
	}
	return out
}

func fromProtoPolicySet(s *runnerpb.PolicySet) PolicySet {
	out := PolicySet{DefaultEffect: Effect(s.GetDefaultEffect())}
	if ps := s.GetPolicies(); len(ps) > 0 {
		out.Policies = make(map[string]ToolPolicy, len(ps))
		for name, p := range ps {
			out.Policies[name] = fromProtoToolPolicy(p)
		}
	}
	return out
}

func toProtoFrameworkMessage(m FrameworkMessage) *runnerpb.FrameworkMessage {
	return &runnerpb.FrameworkMessage{
		Role:          string(m.Role),
		Text:          m.Text,
		FrameworkItem: m.Item,
		ToolCallId:    m.ToolCallID,
		ToolName:      m.ToolName,
		ToolStatus:    string(m.ToolStatus),
	}
}

func fromProtoFrameworkMessage(m *runnerpb.FrameworkMessage) FrameworkMessage {
	return FrameworkMessage{
		Role:       Role(m.GetRole()),
		Text:       m.GetText(),
		Item:       m.GetFrameworkItem(),
		ToolCallID: m.GetToolCallId(),
		ToolName:   m.GetToolName(),
		ToolStatus: ToolCallStatus(m.GetToolStatus()),
	}
}

func toProtoFrameworkMessages(ms []FrameworkMessage) []*runnerpb.FrameworkMessage {
	return convertSlice(ms, toProtoFrameworkMessage)
}

func fromProtoFrameworkMessages(ms []*runnerpb.FrameworkMessage) []FrameworkMessage {
	return convertSlice(ms, fromProtoFrameworkMessage)
}

func toProtoMessage(m Message) *runnerpb.Message {
	return &runnerpb.Message{
		Sequence:      m.Sequence,
		Role:          string(m.Role),
		Text:          m.Text,
		FrameworkItem: m.Item,
		ToolCallId:    m.ToolCallID,
		ToolName:      m.ToolName,
		TurnId:        m.TurnID,
		ToolStatus:    string(m.ToolStatus),
	}
}

func fromProtoMessage(m *runnerpb.Message) Message {
	return Message{
		Sequence:   m.GetSequence(),
		Role:       Role(m.GetRole()),
		Text:       m.GetText(),
		Item:       m.GetFrameworkItem(),
		ToolCallID: m.GetToolCallId(),
		ToolName:   m.GetToolName(),
		TurnID:     m.GetTurnId(),
		ToolStatus: ToolCallStatus(m.GetToolStatus()),
	}
}

func toProtoToolCall(c ToolCall) *runnerpb.ToolCall {
	return &runnerpb.ToolCall{
		ToolCallId:              c.ToolCallID,
		ToolName:                c.ToolName,
		Arguments:               c.Arguments,
		Effect:                  string(c.Effect),
		RequiresApproval:        c.RequiresApproval,
		Status:                  string(c.Status),
		DeferralOrder:           int32(c.DeferralOrder),
		Output:                  c.Output,
		Error:                   c.Error,
		RejectionMessage:        c.RejectionMessage,
		ToolSourceReference:     c.ToolSourceReference,
		CancellationReason:      c.CancellationReason,
		InputContinuation:       c.InputContinuation,
		TaskId:                  c.TaskID,
		TaskPollIntervalSeconds: int32(c.TaskPollIntervalSeconds),
	}
}

func fromProtoToolCall(c *runnerpb.ToolCall) ToolCall {
	return ToolCall{
		ToolCallID:              c.GetToolCallId(),
		ToolName:                c.GetToolName(),
		Arguments:               c.GetArguments(),
		Effect:                  Effect(c.GetEffect()),
		RequiresApproval:        c.GetRequiresApproval(),
		Status:                  ToolCallStatus(c.GetStatus()),
		DeferralOrder:           int(c.GetDeferralOrder()),
		Output:                  c.GetOutput(),
		Error:                   c.GetError(),
		RejectionMessage:        c.GetRejectionMessage(),
		ToolSourceReference:     c.GetToolSourceReference(),
		CancellationReason:      c.GetCancellationReason(),
		InputContinuation:       c.GetInputContinuation(),
		TaskID:                  c.GetTaskId(),
		TaskPollIntervalSeconds: int(c.GetTaskPollIntervalSeconds()),
	}
}

// toProtoUsage sends a Go runner's usage: ModelCalls always (0 means none),
// TotalTokens only when set (0 is how a Go runner leaves it out).
func toProtoUsage(u Usage) *runnerpb.Usage {
	p := &runnerpb.Usage{
		InputTokens:       u.InputTokens,
		OutputTokens:      u.OutputTokens,
		CachedInputTokens: u.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens,
		ModelCalls:        &u.ModelCalls,
	}
	if u.TotalTokens != 0 {
		p.TotalTokens = &u.TotalTokens
	}
	return p
}

// fromProtoUsage reads a runner's usage of one call: a left-out
// total_tokens is input + output tokens, and a left-out model_calls (or
// usage) is one call; values the runner set, 0 included, are kept.
func fromProtoUsage(u *runnerpb.Usage) Usage {
	out := Usage{
		InputTokens:       u.GetInputTokens(),
		OutputTokens:      u.GetOutputTokens(),
		CachedInputTokens: u.GetCachedInputTokens(),
		ReasoningTokens:   u.GetReasoningTokens(),
		TotalTokens:       u.GetInputTokens() + u.GetOutputTokens(),
		ModelCalls:        1,
	}
	if u != nil && u.TotalTokens != nil {
		out.TotalTokens = u.GetTotalTokens()
	}
	if u != nil && u.ModelCalls != nil {
		out.ModelCalls = u.GetModelCalls()
	}
	return out
}

func toProtoMetadata(m *ModelCallMetadata) *runnerpb.ModelCallMetadata {
	if m == nil {
		return nil
	}
	return &runnerpb.ModelCallMetadata{
		RequestModel:  m.RequestModel,
		ResponseModel: m.ResponseModel,
		ProviderName:  m.ProviderName,
		ResponseId:    m.ResponseID,
		FinishReasons: nilIfEmpty(m.FinishReasons),
	}
}

func fromProtoMetadata(m *runnerpb.ModelCallMetadata) *ModelCallMetadata {
	if m == nil {
		return nil
	}
	return &ModelCallMetadata{
		RequestModel:  m.GetRequestModel(),
		ResponseModel: m.GetResponseModel(),
		ProviderName:  m.GetProviderName(),
		ResponseID:    m.GetResponseId(),
		FinishReasons: nilIfEmpty(m.GetFinishReasons()),
	}
}

func toProtoToolDefinition(d ToolDefinition) *runnerpb.ToolDefinition {
	return &runnerpb.ToolDefinition{
		Name:        d.Name,
		Description: d.Description,
		InputSchema: string(d.InputSchema),
		Effect:      string(d.Effect),
	}
}

func fromProtoToolDefinition(d *runnerpb.ToolDefinition) ToolDefinition {
	var schema json.RawMessage
	if s := d.GetInputSchema(); s != "" {
		schema = json.RawMessage(s)
	}
	return ToolDefinition{
		Name:        d.GetName(),
		Description: d.GetDescription(),
		InputSchema: schema,
		Effect:      Effect(d.GetEffect()),
	}
}

func toProtoTurn(t *TurnContext) *runnerpb.TurnContext {
	if t == nil {
		return &runnerpb.TurnContext{}
	}
	return &runnerpb.TurnContext{
		Agent:     t.Agent,
		SessionId: t.SessionID,
		TurnId:    t.TurnID,
		Attempt:   int32(t.Attempt),
		Messages:  convertSlice(t.Messages, toProtoMessage),
		RunState:  t.RunState,
		ToolCalls: convertSlice(t.ToolCalls, toProtoToolCall),
		Policies:  toProtoPolicySet(t.Policies),
		HostTools: convertSlice(t.HostTools, toProtoToolDefinition),

		SessionSettingsJson: string(t.SessionSettings),
		ContextSummary:      toProtoContextSummary(t.ContextSummary),
		Plan:                toProtoPlan(t.Plan),
		InteractionMode:     t.InteractionMode,
		CachedFrom:          t.CachedFrom,
		CachedThrough:       t.CachedThrough,
	}
}

func toProtoPlan(p *Plan) *runnerpb.Plan {
	if p == nil {
		return nil
	}
	out := &runnerpb.Plan{Revision: int32(p.Revision), Status: p.Status}
	for _, t := range p.Tasks {
		out.Tasks = append(out.Tasks, &runnerpb.PlanTask{Content: t.Content, Status: t.Status})
	}
	return out
}

func fromProtoPlan(p *runnerpb.Plan) *Plan {
	if p == nil {
		return nil
	}
	out := &Plan{Revision: int(p.GetRevision()), Status: p.GetStatus(), Tasks: []PlanTask{}}
	for _, t := range p.GetTasks() {
		out.Tasks = append(out.Tasks, PlanTask{Content: t.GetContent(), Status: t.GetStatus()})
	}
	return out
}

func toProtoContextSummary(c *ContextSummary) *runnerpb.ContextSummary {
	if c == nil {
		return nil
	}
	return &runnerpb.ContextSummary{Generation: int32(c.Generation), FirstSequence: c.FirstSequence, LastSequence: c.LastSequence, Text: c.Text, CreatedAt: c.CreatedAt}
}

func fromProtoContextSummary(c *runnerpb.ContextSummary) *ContextSummary {
	if c == nil {
		return nil
	}
	return &ContextSummary{Generation: int(c.GetGeneration()), FirstSequence: c.GetFirstSequence(), LastSequence: c.GetLastSequence(), Text: c.GetText(), CreatedAt: c.GetCreatedAt()}
}

func fromProtoTurn(t *runnerpb.TurnContext) TurnContext {
	return TurnContext{
		Agent:     t.GetAgent(),
		SessionID: t.GetSessionId(),
		TurnID:    t.GetTurnId(),
		Attempt:   int(t.GetAttempt()),
		Messages:  convertSlice(t.GetMessages(), fromProtoMessage),
		RunState:  t.GetRunState(),
		ToolCalls: convertSlice(t.GetToolCalls(), fromProtoToolCall),
		Policies:  fromProtoPolicySet(t.GetPolicies()),
		HostTools: convertSlice(t.GetHostTools(), fromProtoToolDefinition),

		SessionSettings: settingsJSON(t.GetSessionSettingsJson()),
		ContextSummary:  fromProtoContextSummary(t.GetContextSummary()),
		Plan:            fromProtoPlan(t.GetPlan()),
		InteractionMode: t.GetInteractionMode(),
	}
}

// settingsJSON is the settings' JSON, nil when there are none.
func settingsJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func toProtoDeferredToolCall(c DeferredToolCall) *runnerpb.DeferredToolCall {
	return &runnerpb.DeferredToolCall{
		ToolCallId:          c.ToolCallID,
		ToolName:            c.ToolName,
		Arguments:           c.Arguments,
		Policy:              toProtoToolPolicy(c.Policy),
		ToolSourceReference: c.ToolSourceReference,
	}
}

func fromProtoDeferredToolCall(c *runnerpb.DeferredToolCall) DeferredToolCall {
	return DeferredToolCall{
		ToolCallID:          c.GetToolCallId(),
		ToolName:            c.GetToolName(),
		Arguments:           c.GetArguments(),
		Policy:              fromProtoToolPolicy(c.GetPolicy()),
		ToolSourceReference: c.GetToolSourceReference(),
	}
}

// toProtoRunModelStepResponse converts r, which must hold exactly one
// outcome (checkRunModelStepResponse).
func toProtoRunModelStepResponse(r *RunModelStepResponse) *runnerpb.RunModelStepResponse {
	switch {
	case r.TurnCompleted != nil:
		c := r.TurnCompleted
		return &runnerpb.RunModelStepResponse{Outcome: &runnerpb.RunModelStepResponse_TurnCompleted{
			TurnCompleted: &runnerpb.TurnCompleted{
				NewMessages: toProtoFrameworkMessages(c.NewMessages),
				Usage:       toProtoUsage(c.Usage),
				Metadata:    toProtoMetadata(c.Metadata),
			},
		}}
	case r.ToolCallsRequested != nil:
		c := r.ToolCallsRequested
		return &runnerpb.RunModelStepResponse{Outcome: &runnerpb.RunModelStepResponse_ToolCallsRequested{
			ToolCallsRequested: &runnerpb.ToolCallsRequested{
				RunState:    c.RunState,
				ToolCalls:   convertSlice(c.ToolCalls, toProtoDeferredToolCall),
				NewMessages: toProtoFrameworkMessages(c.NewMessages),
				Usage:       toProtoUsage(c.Usage),
				Metadata:    toProtoMetadata(c.Metadata),
			},
		}}
	}
	return &runnerpb.RunModelStepResponse{}
}

func fromProtoRunModelStepResponse(r *runnerpb.RunModelStepResponse) *RunModelStepResponse {
	out := &RunModelStepResponse{}
	switch o := r.GetOutcome().(type) {
	case *runnerpb.RunModelStepResponse_TurnCompleted:
		c := o.TurnCompleted
		out.TurnCompleted = &TurnCompleted{
			NewMessages: fromProtoFrameworkMessages(c.GetNewMessages()),
			Usage:       fromProtoUsage(c.GetUsage()),
			Metadata:    fromProtoMetadata(c.GetMetadata()),
		}
	case *runnerpb.RunModelStepResponse_ToolCallsRequested:
		c := o.ToolCallsRequested
		out.ToolCallsRequested = &ToolCallsRequested{
			RunState:    c.GetRunState(),
			ToolCalls:   convertSlice(c.GetToolCalls(), fromProtoDeferredToolCall),
			NewMessages: fromProtoFrameworkMessages(c.GetNewMessages()),
			Usage:       fromProtoUsage(c.GetUsage()),
			Metadata:    fromProtoMetadata(c.GetMetadata()),
		}
	}
	return out
}

func toProtoExecuteToolRequest(r *ExecuteToolRequest) *runnerpb.ExecuteToolRequest {
	return &runnerpb.ExecuteToolRequest{
		Agent:               r.Agent,
		SessionId:           r.SessionID,
		TurnId:              r.TurnID,
		ToolCall:            toProtoToolCall(r.ToolCall),
		IdempotencyKey:      r.IdempotencyKey,
		Attempt:             int32(r.Attempt),
		HeartbeatCheckpoint: r.HeartbeatCheckpoint,
		InputAnswers:        nilIfEmpty(r.InputAnswers),
		SupportsToolTasks:   r.SupportsToolTasks,
	}
}

func fromProtoExecuteToolRequest(r *runnerpb.ExecuteToolRequest) *ExecuteToolRequest {
	return &ExecuteToolRequest{
		Agent:               r.GetAgent(),
		SessionID:           r.GetSessionId(),
		TurnID:              r.GetTurnId(),
		ToolCall:            fromProtoToolCall(r.GetToolCall()),
		IdempotencyKey:      r.GetIdempotencyKey(),
		Attempt:             int(r.GetAttempt()),
		HeartbeatCheckpoint: r.GetHeartbeatCheckpoint(),
		InputAnswers:        nilIfEmpty(r.GetInputAnswers()),
		SupportsToolTasks:   r.GetSupportsToolTasks(),
	}
}

func toProtoPollToolTaskRequest(r *PollToolTaskRequest) *runnerpb.PollToolTaskRequest {
	out := &runnerpb.PollToolTaskRequest{
		Agent:        r.Agent,
		SessionId:    r.SessionID,
		TurnId:       r.TurnID,
		ToolCall:     toProtoToolCall(r.ToolCall),
		TaskId:       r.TaskID,
		Continuation: r.Continuation,
		Attempt:      int32(r.Attempt),
	}
	if a := r.PendingAnswer; a != nil {
		out.PendingAnswer = &runnerpb.QuestionAnswer{Resolution: a.Resolution, Answer: a.Answer}
	}
	return out
}

func fromProtoPollToolTaskRequest(r *runnerpb.PollToolTaskRequest) *PollToolTaskRequest {
	out := &PollToolTaskRequest{
		Agent:        r.GetAgent(),
		SessionID:    r.GetSessionId(),
		TurnID:       r.GetTurnId(),
		ToolCall:     fromProtoToolCall(r.GetToolCall()),
		TaskID:       r.GetTaskId(),
		Continuation: r.GetContinuation(),
		Attempt:      int(r.GetAttempt()),
	}
	if a := r.GetPendingAnswer(); a != nil {
		out.PendingAnswer = &QuestionAnswer{Resolution: a.GetResolution(), Answer: a.GetAnswer()}
	}
	return out
}

// toProtoExecuteToolResponse converts r, which must hold exactly one
// outcome (checkExecuteToolResponse).
func toProtoExecuteToolResponse(r *ExecuteToolResponse) *runnerpb.ExecuteToolResponse {
	out := &runnerpb.ExecuteToolResponse{}
	switch {
	case r.Result != nil:
		out.Outcome = &runnerpb.ExecuteToolResponse_Result{Result: &runnerpb.ToolResult{Output: r.Result.Output}}
	case r.Error != nil:
		out.Outcome = &runnerpb.ExecuteToolResponse_Error{Error: &runnerpb.ToolExecutionError{Message: r.Error.Message}}
	case r.InputRequested != nil:
		q := r.InputRequested
		out.Outcome = &runnerpb.ExecuteToolResponse_InputRequested{InputRequested: &runnerpb.ToolInputRequested{
			Question:       q.Question,
			Choices:        nilIfEmpty(q.Choices),
			AllowsFreeText: q.AllowsFreeText,
			Continuation:   q.Continuation,
		}}
	case r.TaskStarted != nil:
		out.Outcome = &runnerpb.ExecuteToolResponse_TaskStarted{TaskStarted: &runnerpb.ToolTaskStarted{
			TaskId:              r.TaskStarted.TaskID,
			PollIntervalSeconds: int32(r.TaskStarted.PollIntervalSeconds),
		}}
	case r.TaskPending != nil:
		out.Outcome = &runnerpb.ExecuteToolResponse_TaskPending{TaskPending: &runnerpb.ToolTaskPending{
			PollIntervalSeconds: int32(r.TaskPending.PollIntervalSeconds),
			Continuation:        r.TaskPending.Continuation,
		}}
	}
	return out
}

func fromProtoExecuteToolResponse(r *runnerpb.ExecuteToolResponse) *ExecuteToolResponse {
	out := &ExecuteToolResponse{}
	switch o := r.GetOutcome().(type) {
	case *runnerpb.ExecuteToolResponse_Result:
		out.Result = &ToolResult{Output: o.Result.GetOutput()}
	case *runnerpb.ExecuteToolResponse_Error:
		out.Error = &ToolExecutionError{Message: o.Error.GetMessage()}
	case *runnerpb.ExecuteToolResponse_InputRequested:
		q := o.InputRequested
		out.InputRequested = &ToolInputRequested{
			Question:       q.GetQuestion(),
			Choices:        nilIfEmpty(q.GetChoices()),
			AllowsFreeText: q.GetAllowsFreeText(),
			Continuation:   q.GetContinuation(),
		}
	case *runnerpb.ExecuteToolResponse_TaskStarted:
		out.TaskStarted = &ToolTaskStarted{
			TaskID:              o.TaskStarted.GetTaskId(),
			PollIntervalSeconds: int(o.TaskStarted.GetPollIntervalSeconds()),
		}
	case *runnerpb.ExecuteToolResponse_TaskPending:
		out.TaskPending = &ToolTaskPending{
			PollIntervalSeconds: int(o.TaskPending.GetPollIntervalSeconds()),
			Continuation:        o.TaskPending.GetContinuation(),
		}
	}
	return out
}

func toProtoCancelToolTaskRequest(r *CancelToolTaskRequest) *runnerpb.CancelToolTaskRequest {
	return &runnerpb.CancelToolTaskRequest{
		Agent:     r.Agent,
		SessionId: r.SessionID,
		ToolCall:  toProtoToolCall(r.ToolCall),
		TaskId:    r.TaskID,
	}
}

func fromProtoCancelToolTaskRequest(r *runnerpb.CancelToolTaskRequest) *CancelToolTaskRequest {
	return &CancelToolTaskRequest{
		Agent:     r.GetAgent(),
		SessionID: r.GetSessionId(),
		ToolCall:  fromProtoToolCall(r.GetToolCall()),
		TaskID:    r.GetTaskId(),
	}
}

func toProtoSummarizeContextRequest(r *SummarizeContextRequest) *runnerpb.SummarizeContextRequest {
	return &runnerpb.SummarizeContextRequest{
		Turn:             toProtoTurn(&r.Turn),
		Messages:         convertSlice(r.Messages, toProtoMessage),
		PreviousSummary:  r.PreviousSummary,
		InputTokenBudget: r.InputTokenBudget,
	}
}

func fromProtoSummarizeContextRequest(r *runnerpb.SummarizeContextRequest) *SummarizeContextRequest {
	return &SummarizeContextRequest{
		Turn:             fromProtoTurn(r.GetTurn()),
		Messages:         convertSlice(r.GetMessages(), fromProtoMessage),
		PreviousSummary:  r.GetPreviousSummary(),
		InputTokenBudget: r.GetInputTokenBudget(),
	}
}

// convertSlice maps in with f; an empty in gives nil.
func convertSlice[S ~[]E, E, T any](in S, f func(E) T) []T {
	if len(in) == 0 {
		return nil
	}
	out := make([]T, len(in))
	for i, e := range in {
		out[i] = f(e)
	}
	return out
}

// nilIfEmpty returns a copy of in, or nil when in is empty.
func nilIfEmpty(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return append([]string(nil), in...)
}
