// Package mcpsource is the host side of MCP tool sources: the worker lists
// the tools of the MCP servers its operator configured, offers them to a
// runner as tool definitions, and runs each call the runner defers in its
// own tool Step. The runner never speaks MCP.
//
// A [Source] holds a set of [Server] configs, stdio (a new process per
// request, with exactly the environment the config grants) or Streamable
// HTTP (a new HTTP connection per request). [Source.Tools] lists every
// server with a cache per server: the first listing is awaited, a listing
// older than five minutes is refreshed in the background, and a server that
// cannot be listed is left out and backed off for 30 seconds, so one bad
// server never hides the others' tools. Each [Tool] carries its offered
// name ("<server>__<tool>", see [ToolName]), its input schema, the source
// reference that routes a call back ([Tool.Ref]) and the effect its
// annotations give it when the server is trusted.
//
// [Source.Call] runs one call and returns an [Outcome] whose [Kind] is the
// spec's result and error mapping: Succeeded, ToolFailed (the model sees
// the text), NotSent (the tool did not run), or OutcomeUnknown (sent, then
// lost: retry a read or idempotent_write with the same idempotency key,
// record outcome_unknown for any other effect).
//
// The client speaks MCP 2026-07-28 (server/discover, no protocol session)
// and falls back to the initialize handshake of 2025-11-25 and older for a
// server that does not support it; the go-sdk negotiates this in
// Client.Connect.
//
// Headers, environment values and a URL's query and user info are secrets:
// they never appear in an error, an Outcome or a log.
package mcpsource
