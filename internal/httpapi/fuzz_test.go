package httpapi

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzDecodeBodies feeds request bodies to the strict decoder of every
// route: it never panics, and a body it accepts is exactly one JSON object
// of known fields.
func FuzzDecodeBodies(f *testing.F) {
	for _, seed := range []string{
		`{"agent":"orders","session_id":"s-1","initial_message":"hi"}`,
		`{"text":"refund order 7"}`, `{"text":"x","message_id":"m-1"}`,
		`{"approved":true,"rejection_message":"no"}`,
		`{}`, `[]`, `{"agent":1}`, `{"text":"a"} {}`, `{"x":1}`, "\xff", ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range []any{&StartSessionRequest{}, &SendMessageRequest{}, &ResolveRequest{}, &SettingsRequest{}} {
			err := decodeJSON(body, v)
			var ae *apiError
			if err != nil && (!errors.As(err, &ae) || ae.status != 400) {
				t.Fatalf("decode error %v is not a 400", err)
			}
		}
	})
}

// FuzzParseListQuery feeds query strings to list_agent_messages' parser.
func FuzzParseListQuery(f *testing.F) {
	for _, seed := range []string{"before_sequence=10&limit=5", "limit=0", "limit=201", "x=1", "before_sequence=-1", "limit=%zz"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		req, err := parseListQuery(q)
		if err == nil && (req.Limit < 0 || req.Limit > 200 || req.BeforeSequence < 0) {
			t.Fatalf("accepted %q as %+v", raw, req)
		}
	})
}

// FuzzUIChatRequest feeds bodies to the useChat route's reader: it never
// panics, answers a 400 for what it refuses, and what it accepts is a
// non-blank user text or approvals that each name an interrupt.
func FuzzUIChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"id":"s","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"refund order 7"}]}],"trigger":"submit-message"}`,
		`{"messages":[{"role":"assistant","parts":[{"type":"tool-refund_order","toolCallId":"c1","state":"approval-responded","approval":{"id":"c1","approved":true}}]}]}`,
		`{"messages":[{"role":"assistant","parts":[{"type":"tool-x","state":"approval-responded","approval":{"id":"c1"}}]}]}`,
		`{"messages":[{"role":"user","parts":[{"type":"file","url":"data:,x"}]}]}`,
		`{"messages":[]}`, `{"trigger":"regenerate-message","messages":[{"role":"user"}]}`, `{"messages":{}}`, `[]`, "\xff", ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req UIChatRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		text, approvals, err := parseUIChat(req)
		var ae *apiError
		switch {
		case err != nil:
			if !errors.As(err, &ae) || ae.status != 400 {
				t.Fatalf("error %v is not a 400", err)
			}
		case (text == "") == (len(approvals) == 0):
			t.Fatalf("accepted %q as text %q and %d approvals", body, text, len(approvals))
		case text != "" && strings.TrimSpace(text) == "":
			t.Fatalf("accepted the blank text %q", text)
		}
		for _, a := range approvals {
			if a.interruptID == "" {
				t.Fatalf("an approval without an interrupt ID from %q", body)
			}
		}
	})
}
