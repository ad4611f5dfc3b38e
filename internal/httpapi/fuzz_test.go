package httpapi

import (
	"errors"
	"net/url"
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
