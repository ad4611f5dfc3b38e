package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TasksExtension is the MCP tasks extension (SEP-2663, for MCP
// 2026-07-28) the client declares on every request: a server may then
// answer a tools/call with a task handle (resultType "task") instead of
// its result, and the client polls tasks/get until the task ends.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The tasks extension's task statuses.
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// Task is the state of an MCP task, as the server last reported it.
type Task struct {
	ID            string
	Status        string
	StatusMessage string
	// PollInterval is the server's suggested wait before the next
	// tasks/get; 0 when it suggested none.
	PollInterval time.Duration
}

// taskWire is a Task on the wire: a CreateTaskResult (resultType
// "task") or a tasks/get result, with a final result, an error or input
// requests by status.
type taskWire struct {
	mcp.ResultBase
	ResultType     string `json:"resultType,omitempty"`
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	PollIntervalMs *int64 `json:"pollIntervalMs,omitempty"`
	// PollInterval is 2025-11-25's name of it.
	PollInterval  *int64          `json:"pollInterval,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         *jsonrpc.Error  `json:"error,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
}

func (w *taskWire) task() *Task {
	t := &Task{ID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage}
	ms := w.PollIntervalMs
	if ms == nil {
		ms = w.PollInterval
	}
	if ms != nil && *ms > 0 {
		t.PollInterval = time.Duration(*ms) * time.Millisecond
	}
	return t
}

// taskParams are the params of tasks/get and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// taskAck is the empty result of tasks/cancel.
type taskAck struct {
	mcp.ResultBase
}

// registerTaskMethods lets client send the extension's methods.
func registerTaskMethods(c *mcp.Client) {
	// The methods are not standard MCP methods, so registering them
	// cannot fail.
	_ = mcp.AddSendingCustomMethod[*taskParams, *taskWire](c, "tasks/get")
	_ = mcp.AddSendingCustomMethod[*taskParams, *taskAck](c, "tasks/cancel")
	_ = mcp.AddSendingCustomMethod[*taskUpdateParams, *taskAck](c, "tasks/update")
	_ = mcp.AddSendingCustomMethod[*taskParams, *rawResult](c, "tasks/result")
}

// taskHandle returns the task a tools/call's raw result started, or nil
// when the result is not a task handle.
func taskHandle(raw json.RawMessage) (*Task, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var w taskWire
	if err := json.Unmarshal(raw, &w); err != nil || w.ResultType != "task" {
		return nil, nil
	}
	if w.TaskID == "" {
		return nil, errors.New("the server answered with a task handle without a taskId")
	}
	return w.task(), nil
}

// taskNameKey carries the task ID of a tasks/* request to the HTTP
// transport, which sends it as the Mcp-Name routing header.
type taskNameKey struct{}

// TaskPoll is what one tasks/get found.
type TaskPoll struct {
	// Task is the task's state. Outcome is set once it ended: its result
	// (Succeeded, or ToolFailed for an isError result, a failed or a
	// cancelled task, or input the session cannot give), or OutcomeUnknown
	// when the task could not be read (the server was unreachable in its
	// connection attempts, or answered with an error, such as for a task
	// it no longer knows): poll again, or give up by the effect class.
	Task    *Task
	Outcome *Outcome
	// Input is set when the task waits for input the session can ask
	// the user for (status input_required, one form elicitation): ask it,
	// then hand the resolution over with [Source.AnswerTask].
	Input *InputRequest
}

// PollTask reads the task taskID of the tool ref names once, on a new
// connection (MCP 2026-07-28 has no protocol session, so any connection
// can poll a task).
func (s *Source) PollTask(ctx context.Context, ref, taskID string) TaskPoll {
	srv, err := s.serverOf(ref)
	if err != nil {
		return TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	conn, err := s.connect(ctx, srv, nil, nil)
	if err != nil {
		return TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	defer conn.close()
	return s.getTask(ctx, srv, conn, taskID)
}

// getTask sends one tasks/get on conn and maps what it says.
func (s *Source) getTask(ctx context.Context, srv *server, conn *connection, taskID string) TaskPoll {
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, taskNameKey{}, taskID), srv.connectionTimeout())
	defer cancel()
	w, err := mcp.CallCustomMethod[*taskParams, *taskWire](rctx, conn.session, "tasks/get", &taskParams{TaskID: taskID})
	if err != nil {
		return TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tasks/get %s: %v", srv.Name, taskID, err)}}
	}
	t := w.task()
	if t.ID == "" {
		t.ID = taskID
	}
	poll := TaskPoll{Task: t}
	switch w.Status {
	case TaskWorking:
	case TaskCompleted:
		var res mcp.CallToolResult
		if err := json.Unmarshal(w.Result, &res); err != nil || len(w.Result) == 0 {
			poll.Outcome = &Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: task %s completed without a tool result", srv.Name, taskID)}
		} else if res.IsError {
			poll.Outcome = &Outcome{Kind: ToolFailed, Text: srv.redactor.String(renderContent(&res))}
		} else {
			poll.Outcome = &Outcome{Kind: Succeeded, Text: renderContent(&res)}
		}
	case TaskFailed:
		text := "the MCP task failed"
		if w.Error != nil {
			text = fmt.Sprintf("MCP error %d: %s", w.Error.Code, w.Error.Message)
		} else if w.StatusMessage != "" {
			text += ": " + w.StatusMessage
		}
		poll.Outcome = &Outcome{Kind: ToolFailed, Text: srv.redactor.String(text)}
	case TaskCancelled:
		text := "the MCP task was cancelled"
		if w.StatusMessage != "" {
			text += ": " + w.StatusMessage
		}
		poll.Outcome = &Outcome{Kind: ToolFailed, Text: srv.redactor.String(text)}
	case TaskInputRequired:
		// One form elicitation the session can ask is a question, which
		// AnswerTask hands over with tasks/update; anything else fails
		// the call, and the waiting task is cancelled.
		var reqs mcp.InputRequestMap
		text := "the MCP server asked for input that this agent session cannot provide yet"
		if err := json.Unmarshal(w.InputRequests, &reqs); err == nil && len(reqs) > 0 {
			if in, ok := question(reqs, ""); ok {
				poll.Input = in
				break
			}
			text = inputRequestedText(reqs)
		}
		poll.Outcome = &Outcome{Kind: ToolFailed, Text: srv.redactor.String(text)}
		_ = s.cancelTask(ctx, srv, conn, taskID)
	default:
		poll.Outcome = &Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: task %s has the unknown status %q", srv.Name, taskID, w.Status)}
	}
	return poll
}

// CancelTask sends tasks/cancel for the task taskID of the tool ref
// names, on a new connection. Any answer ends the cancellation, so a
// retried one is harmless; the task may still end otherwise.
func (s *Source) CancelTask(ctx context.Context, ref, taskID string) error {
	srv, err := s.serverOf(ref)
	if err != nil {
		return err
	}
	conn, err := s.connect(ctx, srv, nil, nil)
	if err != nil {
		return err
	}
	defer conn.close()
	return s.cancelTask(ctx, srv, conn, taskID)
}

func (s *Source) cancelTask(ctx context.Context, srv *server, conn *connection, taskID string) error {
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, taskNameKey{}, taskID), srv.connectionTimeout())
	defer cancel()
	_, err := mcp.CallCustomMethod[*taskParams, *taskAck](rctx, conn.session, "tasks/cancel", &taskParams{TaskID: taskID})
	var werr *jsonrpc.Error
	if err != nil && !errors.As(err, &werr) {
		return srv.errorf("mcp server %q: tasks/cancel %s: %v", srv.Name, taskID, err)
	}
	return nil // the server answered: the cancellation is done with
}

// serverOf finds the configured server of a tool reference.
func (s *Source) serverOf(ref string) (*server, error) {
	name, _, ok := ParseRef(ref)
	if !ok {
		return nil, fmt.Errorf("mcp: %q is not an MCP tool reference", ref)
	}
	srv := s.byName[name]
	if srv == nil {
		return nil, fmt.Errorf("mcp: server %q is not configured", name)
	}
	return srv, nil
}

// NextPollInterval is the wait before a task's next poll, the spec's
// rule: the server's interval rounded up to whole seconds or, when that is
// shorter, double the previous wait, up to a minute; at least a second.
func NextPollInterval(server, previous time.Duration) time.Duration {
	next := (server + time.Second - 1).Truncate(time.Second)
	doubled := min(2*previous, time.Minute)
	if next < doubled {
		next = doubled
	}
	return max(next, time.Second)
}

// taskUpdateParams are the params of tasks/update.
type taskUpdateParams struct {
	mcp.ParamsBase
	TaskID         string                       `json:"taskId"`
	InputResponses map[string]*mcp.ElicitResult `json:"inputResponses"`
}

// The resolutions of a task's question (the session's).
const (
	ResolutionAnswered       = "answered"
	ResolutionDeclined       = "declined"
	ResolutionDeadlinePassed = "deadline_passed"
)

// QuestionKey is the request key of a question's continuation, "" for a
// continuation that is not a question's.
func QuestionKey(cont string) string {
	var c continuation
	if json.Unmarshal([]byte(cont), &c) != nil {
		return ""
	}
	return c.Key
}

// AnswerTask hands the user's resolution of a task's question (whose
// continuation is question) to the task with tasks/update: accept with the
// answer, decline, or cancel for a passed deadline. It first reads the
// task, and sends only while the task still lists that same request, so
// an answer never reaches another one. sent reports whether it sent; poll
// is what the read found. A decline the server refuses cancels the task
// and fails the call.
func (s *Source) AnswerTask(ctx context.Context, ref, taskID, question, resolution, answer string) (sent bool, poll TaskPoll) {
	var c continuation
	if err := json.Unmarshal([]byte(question), &c); err != nil || c.Key == "" {
		return false, TaskPoll{Outcome: &Outcome{Kind: ToolFailed, Text: "the task's question cannot be answered: its continuation is not one of this worker's"}}
	}
	srv, err := s.serverOf(ref)
	if err != nil {
		return false, TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	conn, err := s.connect(ctx, srv, nil, nil)
	if err != nil {
		return false, TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: err}}
	}
	defer conn.close()
	poll = s.getTask(ctx, srv, conn, taskID)
	if poll.Input == nil || QuestionKey(poll.Input.Continuation) != c.Key {
		return false, poll // the task moved on: nothing to answer
	}
	var response *mcp.ElicitResult
	switch resolution {
	case ResolutionAnswered:
		_, responses, err := answerParams(&Answer{Continuation: question, Answer: answer})
		if err != nil {
			return false, TaskPoll{Outcome: &Outcome{Kind: ToolFailed, Text: "the answer cannot be sent to the task: " + err.Error()}}
		}
		response = responses[c.Key].(*mcp.ElicitResult)
	case ResolutionDeclined:
		response = &mcp.ElicitResult{Action: "decline"}
	default:
		response = &mcp.ElicitResult{Action: "cancel"}
	}
	rctx, cancel := context.WithTimeout(context.WithValue(ctx, taskNameKey{}, taskID), srv.connectionTimeout())
	defer cancel()
	_, err = mcp.CallCustomMethod[*taskUpdateParams, *taskAck](rctx, conn.session, "tasks/update",
		&taskUpdateParams{TaskID: taskID, InputResponses: map[string]*mcp.ElicitResult{c.Key: response}})
	if err != nil {
		if resolution == ResolutionDeclined {
			_ = s.cancelTask(ctx, srv, conn, taskID)
			return false, TaskPoll{Outcome: &Outcome{Kind: ToolFailed, Text: "the user declined the task's question, and the server did not take the decline; the task was cancelled"}}
		}
		return false, TaskPoll{Outcome: &Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tasks/update %s: %v", srv.Name, taskID, err)}}
	}
	return true, poll
}

// rawResult keeps a result as the server sent it.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.raw = append(json.RawMessage(nil), b...)
	return nil
}

// The 2025-11-25 task shape (tasks in the core protocol, SEP-1686), which
// servers of that protocol speak: a tool whose execution.taskSupport is
// "required" is called with a "task" field on the request, the server
// answers {"task": {...}}, tasks/get reads the task and tasks/result gets
// the tool's result once it ended. A task lives in the server's protocol
// session, so it is polled on the call's own connection.

// needsTask reports whether a call of the tool mcpName on conn must be
// task-augmented: a server of MCP 2025-11-25 (or older) that lists the
// tool with taskSupport "required".
func (s *Source) needsTask(ctx context.Context, srv *server, conn *connection, mcpName string) bool {
	init := conn.session.InitializeResult()
	if init == nil || init.ProtocolVersion >= "2026-07-28" {
		return false
	}
	if _, err := s.tools(ctx, []*server{srv}, false); err != nil {
		return false
	}
	st := s.states[srv.Name]
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, t := range st.tools {
		if t.MCPName == mcpName {
			return t.TaskSupport == "required"
		}
	}
	return false
}

// taskHandle2025 is the task of a 2025-11-25 CreateTaskResult.
func taskHandle2025(raw json.RawMessage) (*Task, bool) {
	var r struct {
		Task *taskWire `json:"task"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Task == nil || r.Task.TaskID == "" {
		return nil, false
	}
	return r.Task.task(), true
}

// waitForTask2025 polls a 2025-11-25 task on conn until it ends, for at
// most the server's task wait timeout, and gets its result.
func (s *Source) waitForTask2025(ctx context.Context, srv *server, conn *connection, task *Task) Outcome {
	return s.pollUntilEnd(ctx, srv, conn, task, func(id string) (*Task, *Outcome) {
		rctx, cancel := context.WithTimeout(ctx, srv.connectionTimeout())
		w, err := mcp.CallCustomMethod[*taskParams, *taskWire](rctx, conn.session, "tasks/get", &taskParams{TaskID: id})
		cancel()
		if err != nil {
			return nil, &Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tasks/get %s: %v", srv.Name, id, err)}
		}
		t := w.task()
		var out Outcome
		switch w.Status {
		case TaskWorking:
			return t, nil
		case TaskCompleted, TaskFailed:
			out = s.taskResult2025(ctx, srv, conn, id)
		case TaskCancelled:
			text := "the MCP task was cancelled"
			if w.StatusMessage != "" {
				text += ": " + w.StatusMessage
			}
			out = Outcome{Kind: ToolFailed, Text: srv.redactor.String(text)}
		case TaskInputRequired:
			// Its questions come over the tasks/result stream of a live
			// protocol session, which no Step may hold for a person.
			_ = s.cancelTask(context.WithoutCancel(ctx), srv, conn, id)
			out = Outcome{Kind: ToolFailed, Text: "the MCP server asked for input that this agent session cannot provide yet (a question of MCP task " + id + ")"}
		default:
			out = Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: task %s has the unknown status %q", srv.Name, id, w.Status)}
		}
		return t, &out
	})
}

// taskResult2025 gets an ended task's result with tasks/result.
func (s *Source) taskResult2025(ctx context.Context, srv *server, conn *connection, taskID string) Outcome {
	rctx, cancel := context.WithTimeout(ctx, srv.connectionTimeout())
	defer cancel()
	r, err := mcp.CallCustomMethod[*taskParams, *rawResult](rctx, conn.session, "tasks/result", &taskParams{TaskID: taskID})
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return Outcome{Kind: ToolFailed, Text: srv.redactor.String(fmt.Sprintf("MCP error %d: %s", werr.Code, werr.Message))}
	case err != nil:
		return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tasks/result %s: %v", srv.Name, taskID, err)}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tasks/result %s: %v", srv.Name, taskID, err)}
	}
	if res.IsError {
		return Outcome{Kind: ToolFailed, Text: srv.redactor.String(renderContent(&res))}
	}
	return Outcome{Kind: Succeeded, Text: renderContent(&res)}
}
