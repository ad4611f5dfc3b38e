package pluginapi

import (
	"strings"
	"testing"
)

func TestCheckEvent(t *testing.T) {
	tests := []struct {
		typ, payload, wantErr string
	}{
		{"text_delta", `{"text":"hi"}`, ""},
		{"reasoning_delta", `{"text":""}`, ""},
		{"tool_call_started", `{"tool_call_id":"c1","tool_name":"search"}`, ""},
		{"tool_call_finished", `{"tool_call_id":"c1","tool_name":"search","status":"succeeded"}`, ""},
		{"myframework.handoff", `{"to":"billing"}`, ""},
		{"text_delta", `{}`, `text_delta needs {"text": string}`},
		{"tool_call_started", `{"tool_call_id":"c1"}`, "needs tool_call_id and tool_name"},
		{"tool_call_started", `{"tool_call_id":"c1","tool_name":"x","status":"succeeded"}`, "tool_call_started has no status"},
		{"tool_call_finished", `{"tool_call_id":"c1","tool_name":"x","status":"approved"}`, "needs a final status"},
		{"tool_call_finished", `{"tool_call_id":"c1","tool_name":"x"}`, "needs a final status"},
		{"turn_completed", `{"message_count":1}`, `event type "turn_completed" is written by the session`},
		{"usage_recorded", `{}`, "is written by the session"},
		{"handoff", `{}`, `custom event type "handoff" needs an adapter prefix`},
		{"", `{}`, "the event type is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.payload, func(t *testing.T) {
			err := CheckEvent(tt.typ, []byte(tt.payload))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckEvent = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckEvent = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
