// Package httpclient is a Go client of the worker's HTTP API
// (docs/http-api.md): typed calls for every route, and the session
// event stream with resume tokens and attempt-aware text. The terminal
// chat (dex-agent-worker chat) is built on it.
//
// A session is driven by its ID; the snapshot tells what it waits for, and
// its resume token opens the event stream where the snapshot left off, so
// nothing between the two is missed or seen twice:
//
//	c, _ := httpclient.New("https://dex.example", os.Getenv("DEX_API_TOKEN"), nil)
//	id, _ := c.StartSession(ctx, httpclient.StartRequest{Agent: "orders", InitialMessage: "refund order 7"})
//	snap, token, _ := c.Snapshot(ctx, id)
//	es, _ := c.Events(ctx, id, token, "")
//	for {
//		d, err := es.Next() // reconnect with es.LastEventID() after an error
//		...
//	}
//
// Calls set no timeouts of their own: bound each with its context. Error
// answers are *APIError, with the API's code; ErrInvalidResumeToken and
// ErrSessionClosed name the two a client acts on (reload the snapshot;
// start a new session).
package httpclient
