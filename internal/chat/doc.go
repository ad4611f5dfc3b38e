// Package chat is a terminal chat with an agent session over the worker's
// HTTP API (docs/http-api.md): Client is a small typed client of the
// API, and Session runs the chat on an io.Reader of user lines and an
// io.Writer of the conversation, so a terminal, a pipe and a test drive it
// the same way.
//
//	c, err := chat.NewClient("http://127.0.0.1:8080", token, nil)
//	if err != nil {
//		return err
//	}
//	id, err := c.StartSession(ctx, chat.StartRequest{Agent: "orders"})
//	if err != nil {
//		return err
//	}
//	s := &chat.Session{Client: c, ID: id, In: os.Stdin, Out: os.Stdout, Notes: os.Stderr}
//	return s.Run(ctx) // nil at the end of In, once the last turn ended
//
// Session follows the spec's client rules for event streams: it loads the
// snapshot and opens the stream from its resume token, reconnects with
// Last-Event-ID after a dropped stream, reloads the snapshot after a 400,
// drops events it has seen (by ID), keeps only the highest attempt's text
// within one step execution, and reconciles each ended turn with the stored
// messages, so text the events missed is still shown and text shown is not
// shown again.
//
// Turn control: Ctrl-C (Session.Interrupts, or InterruptContext for a
// process's os.Interrupt) and /stop cancel the running turn, a second
// Ctrl-C ends the chat; /steer TEXT steers the turn; on a terminal, a
// message typed while a turn runs asks whether to queue it or to steer
// with it. A closed session's refusal (409 session_closed) is
// ErrSessionClosed.
//
// The sse subpackage reads and writes the Server-Sent Events framing.
package chat
