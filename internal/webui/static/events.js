// Code generated from package wire by TestEventsJS (go test ./internal/webui -run TestEventsJS -args -update-events-js). DO NOT EDIT.
// The live event types of the worker, by a name in capitals: DEX_EVENTS.TURN_STARTED is 'turn_started'.
'use strict';

const DEX_EVENTS = Object.freeze({
  TURN_STARTED: 'turn_started',
  TURN_COMPLETED: 'turn_completed',
  TURN_FAILED: 'turn_failed',
  TURN_STEERED: 'turn_steered',
  TURN_CANCELLED: 'turn_cancelled',
  TURN_RECOVERING: 'turn_recovering',
  TEXT_DELTA: 'text_delta',
  REASONING_DELTA: 'reasoning_delta',
  TOOL_CALL_DEFERRED: 'tool_call_deferred',
  TOOL_CALL_STARTED: 'tool_call_started',
  TOOL_CALL_FINISHED: 'tool_call_finished',
  INTERRUPT_RAISED: 'interrupt_raised',
  INTERRUPT_RESOLVED: 'interrupt_resolved',
  INTERRUPT_EXPIRING: 'interrupt_expiring',
  INTERRUPT_EXTENDED: 'interrupt_extended',
  USAGE_RECORDED: 'usage_recorded',
  COMPACTION_STARTED: 'compaction_started',
  COMPACTION_FINISHED: 'compaction_finished',
  TIMER_STARTED: 'timer_started',
  TOOL_TASK_STARTED: 'tool_task_started',
  PLAN_UPDATED: 'plan_updated',
  PLAN_EXECUTION_STARTED: 'plan_execution_started',
  SPEND_LIMIT_REACHED: 'spend_limit_reached',
  MCP_TOOL_PROGRESS: 'mcp.tool_progress',
  MCP_TASK_STATUS: 'mcp.task_status',
  SUB_AGENT_STARTED: 'sub_agent_started',
  SUB_AGENT_FINISHED: 'sub_agent_finished',
  NOTIFICATION_FAILED: 'notification_failed',
});

// The change feed's own types (GET /v1/sessions/changes); its other changes are event types.
const DEX_CHANGES = Object.freeze({
  SESSION_STARTED: 'session_started',
  SESSION_UPDATED: 'session_updated',
  SESSION_ENDED: 'session_ended',
  RESYNC: 'resync',
});
