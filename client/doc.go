// Package client drives agent sessions: AgentSessionClient starts sessions
// and calls their updates and queries over the Temporal SDK. The requests,
// results and records it sends and receives are package wire's, the JSON a
// client in any language uses.
//
// A session is a Temporal workflow whose type is the agent's flow_type and
// whose ID is the session ID, on the workers' task queue (dex-agents by
// default). Its input is {"initial_message": "..."}; the updates
// send_user_message and resolve_interrupt return a bool; the queries
// get_agent_snapshot and list_agent_messages return wire.Snapshot and
// wire.MessagesPage.
package client
