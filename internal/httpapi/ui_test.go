package httpapi

import (
	"strings"
	"testing"
)

func TestParseUIChat(t *testing.T) {
	yes, no := true, false
	user := func(parts ...UIPart) UIMessage { return UIMessage{ID: "m1", Role: "user", Parts: parts} }
	tests := []struct {
		name      string
		req       UIChatRequest
		text      string
		approvals []uiApproval
		err       string
	}{
		{name: "a user message", req: UIChatRequest{Messages: []UIMessage{user(UIPart{Type: "text", Text: "refund order 7"})}}, text: "refund order 7"},
		{name: "text parts joined", req: UIChatRequest{Messages: []UIMessage{user(UIPart{Type: "text", Text: "a"}, UIPart{Type: "data-x"}, UIPart{Type: "text", Text: "b"})}}, text: "a\nb"},
		{name: "approval responses", req: UIChatRequest{Messages: []UIMessage{user(UIPart{Type: "text", Text: "x"}), {Role: "assistant", Parts: []UIPart{
			{Type: "text", Text: "I will refund."},
			{Type: "tool-refund_order", State: "approval-responded", Approval: &UIApproval{ID: "c1", Approved: &yes}},
			{Type: "tool-refund_order", State: "approval-responded", Approval: &UIApproval{ID: "c2", Approved: &no, Reason: "too much"}},
			{Type: "tool-lookup_order", State: "output-available"},
		}}}}, approvals: []uiApproval{{interruptID: "c1", approved: true}, {interruptID: "c2", approved: false, reason: "too much"}}},
		{name: "no messages", req: UIChatRequest{}, err: `"messages" is empty`},
		{name: "regenerate", req: UIChatRequest{Trigger: "regenerate-message", Messages: []UIMessage{user(UIPart{Type: "text", Text: "x"})}}, err: "does not regenerate"},
		{name: "a file part", req: UIChatRequest{Messages: []UIMessage{user(UIPart{Type: "file"})}}, err: `messages[0].parts[0]: a "file" part is not supported`},
		{name: "blank text", req: UIChatRequest{Messages: []UIMessage{user(UIPart{Type: "text", Text: "  "})}}, err: "no text"},
		{name: "an assistant message without approvals", req: UIChatRequest{Messages: []UIMessage{{Role: "assistant", Parts: []UIPart{{Type: "text", Text: "hi"}}}}}, err: "answers no approval"},
		{name: "an approval without its answer", req: UIChatRequest{Messages: []UIMessage{{Role: "assistant", Parts: []UIPart{{Type: "tool-x", State: "approval-responded", Approval: &UIApproval{ID: "c1"}}}}}}, err: "needs approval.id and approval.approved"},
		{name: "a system message", req: UIChatRequest{Messages: []UIMessage{{Role: "system"}}}, err: `role is "system"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, approvals, err := parseUIChat(tt.req)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || text != tt.text || len(approvals) != len(tt.approvals) {
				t.Fatalf("= %q %v %v", text, approvals, err)
			}
			for i := range approvals {
				if approvals[i] != tt.approvals[i] {
					t.Errorf("approval %d = %+v, want %+v", i, approvals[i], tt.approvals[i])
				}
			}
		})
	}
}
