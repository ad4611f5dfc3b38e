// Package sse reads and writes Server-Sent Events as the HTML standard
// defines them (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// lines end in CRLF, LF or CR; "data" lines of one event join with "\n";
// comment lines (": keep-alive") and the "retry" field are skipped; an "id"
// field sets the last event ID even in a frame without data.
//
//	r := sse.NewReader(resp.Body)
//	for {
//		ev, err := r.Next()
//		if err != nil {
//			return err // io.EOF when the stream ends
//		}
//		handle(ev.ID, ev.Data)
//	}
//
// Write renders an Event as one frame; Next reads it back unchanged, except
// that line breaks in Data come back as "\n".
package sse
