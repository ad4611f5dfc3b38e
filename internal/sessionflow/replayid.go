package sessionflow

import (
	"regexp"

	historypb "go.temporal.io/api/history/v1"
)

// subAgentIDRe is a sub-agent's session ID: its parent's, then .sub-N.
var subAgentIDRe = regexp.MustCompile(`\.sub-\d+$`)

// RecordedSessionID is the session ID a history ran under, as far as its
// commands show it: a parent's commands name its children by the parent's
// own ID (.sub-N after it), so a replay must run under that ID. It is ""
// when no command names it, and any ID then replays the history.
func RecordedSessionID(h *historypb.History) string {
	for _, e := range h.GetEvents() {
		if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			return subAgentIDRe.ReplaceAllString(a.GetWorkflowId(), "")
		}
	}
	return ""
}
