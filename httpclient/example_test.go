package httpclient_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/httpclient"
)

// A turn with an approval: start a session, follow its events from the
// snapshot's resume token, approve the refund it asks for, and print the
// answer's text as it streams (a retried model call's text only once).
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := httpclient.New("http://127.0.0.1:8080", os.Getenv("DEX_API_TOKEN"), nil)
	if err != nil {
		log.Fatal(err)
	}
	id, err := c.StartSession(ctx, httpclient.StartRequest{Agent: "orders", InitialMessage: "refund order 7"})
	if err != nil {
		log.Fatal(err)
	}
	_, token, err := c.Snapshot(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	es, err := c.Events(ctx, id, token, "")
	if err != nil {
		log.Fatal(err)
	}
	defer es.Close()
	var text httpclient.TurnText
	for {
		d, err := es.Next()
		if err != nil {
			log.Fatal(err) // a real client reconnects: see ExampleClient_Events
		}
		text.Add(d.Event)
		switch d.Event.Type {
		case wire.EventInterruptRaised:
			var p struct {
				InterruptID string `json:"interrupt_id"`
			}
			if err := d.Event.Payload.Decode(&p); err == nil {
				_, err = c.ResolveInterrupt(ctx, id, p.InterruptID, httpclient.Resolution{Approved: true})
			}
			if err != nil {
				log.Fatal(err)
			}
		case wire.EventTurnCompleted:
			fmt.Println(text.String())
			return
		}
	}
}

// Follow a session's events across dropped connections: reconnect with
// the last event ID, and reload the snapshot when the server no longer
// knows the token (trimmed, or from before a restart of the event store).
func ExampleClient_Events() {
	ctx := context.Background()
	c, err := httpclient.New("http://127.0.0.1:8080", os.Getenv("DEX_API_TOKEN"), nil)
	if err != nil {
		log.Fatal(err)
	}
	id := "session-1"
	_, token, err := c.Snapshot(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	lastID := ""
	for ctx.Err() == nil {
		var es *httpclient.EventStream
		if lastID != "" {
			es, err = c.Events(ctx, id, "", lastID)
		} else {
			es, err = c.Events(ctx, id, token, "")
		}
		if errors.Is(err, httpclient.ErrInvalidResumeToken) {
			// Start over from a fresh snapshot.
			if _, token, err = c.Snapshot(ctx, id); err != nil {
				log.Fatal(err)
			}
			lastID = ""
			continue
		}
		if err != nil {
			time.Sleep(time.Second)
			continue
		}
		for {
			d, err := es.Next()
			if err != nil {
				break // reconnect after the last event read
			}
			lastID = d.ID
			fmt.Println(d.Event.Type)
		}
		es.Close()
	}
}

// List the sessions that wait for a person, page by page.
func ExampleClient_ListSessions() {
	ctx := context.Background()
	c, err := httpclient.New("http://127.0.0.1:8080", os.Getenv("DEX_API_TOKEN"), nil)
	if err != nil {
		log.Fatal(err)
	}
	opts := httpclient.ListSessionsOptions{WaitingFor: []string{"approval", "question"}}
	for {
		page, err := c.ListSessions(ctx, opts)
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range page.Sessions {
			fmt.Println(s.SessionID, s.WaitingFor)
		}
		if page.NextPageToken == "" {
			return
		}
		opts.PageToken = page.NextPageToken
	}
}
