// Package wire is the JSON vocabulary of a session as clients, browsers
// and other languages see it. It imports nothing outside the standard
// library, so any program can use it without the worker, the Temporal SDK
// or the plugin SDK.
//
// It holds:
//
//   - the names of the session workflow, its updates, queries and Steps,
//     and the request and result of each update and query
//     (SendUserMessageRequest, ResolveInterruptRequest, ...);
//
//   - the records a snapshot shows: Snapshot, SessionState, Message,
//     ToolCall, Interrupt, Plan, Usage, spend, statuses and kinds;
//
//   - the application error types a refused request fails with;
//
//   - the live events: every event type (EventTypes), one payload struct
//     per type, and NewPayload to decode one:
//
//     var e struct {
//     Type    string          `json:"type"`
//     Payload json.RawMessage `json:"payload"`
//     }
//     // ... read e from the event stream
//     if p := wire.NewPayload(e.Type); p != nil {
//     _ = json.Unmarshal(e.Payload, p)
//     }
//
// The JSON of every type is pinned by golden files (see the session
// package's testdata/wire), so a change of a name, a type or an omitempty
// never reaches the wire unnoticed.
package wire
