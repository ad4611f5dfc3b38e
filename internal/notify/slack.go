package notify

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// Slack's limits on an incoming webhook's blocks
// (https://api.slack.com/reference/block-kit/blocks).
const (
	slackMaxText        = 3000
	slackMaxButtonText  = 75
	slackMaxURL         = 3000
	slackMaxActionItems = 25
)

// SlackPayload is an incoming webhook's JSON: a fallback text and Block
// Kit blocks.
type SlackPayload struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks"`
}

// SlackBlock is a section (Text) or an actions block (Elements).
type SlackBlock struct {
	Type     string         `json:"type"`
	Text     *SlackText     `json:"text,omitempty"`
	Elements []SlackElement `json:"elements,omitempty"`
}

// SlackText is a text object.
type SlackText struct {
	Type string `json:"type"` // mrkdwn or plain_text
	Text string `json:"text"`
}

// SlackElement is a link button: it opens the URL (the link's
// confirmation page).
type SlackElement struct {
	Type     string    `json:"type"` // button
	Text     SlackText `json:"text"`
	URL      string    `json:"url"`
	ActionID string    `json:"action_id"`
	Style    string    `json:"style,omitempty"` // primary or danger
}

func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// slackEscape escapes Slack's control characters in mrkdwn.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func slackBody(m Message, l Links) SlackPayload {
	in := m
	head := "*Approval needed*"
	what := fmt.Sprintf("The %s agent wants to run `%s`.", slackEscape(in.Agent), slackEscape(in.ToolName))
	if in.Kind == wire.InterruptKindQuestion {
		head = "*Question*"
		what = fmt.Sprintf("The %s agent asks: %s", slackEscape(in.Agent), slackEscape(in.Question))
	}
	if m.Escalation {
		head += " (nobody answered yet)"
	}
	if m.Expiring {
		head += " (its deadline is near)"
	}
	text := head + "\n" + what
	if in.Deadline != "" {
		text += "\nDeadline: " + in.Deadline
	}
	text += "\nSession `" + slackEscape(in.SessionID) + "`"
	p := SlackPayload{Text: cut(strings.ReplaceAll(text, "*", ""), slackMaxText),
		Blocks: []SlackBlock{{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: cut(text, slackMaxText)}}}}
	var buttons []SlackElement
	button := func(label, url, id, style string) {
		if url == "" || len(url) > slackMaxURL || len(buttons) >= slackMaxActionItems {
			return
		}
		buttons = append(buttons, SlackElement{Type: "button", Text: SlackText{Type: "plain_text", Text: cut(label, slackMaxButtonText)}, URL: url, ActionID: id, Style: style})
	}
	button("Approve", l.Approve, "approve", "primary")
	button("Reject", l.Reject, "reject", "danger")
	for i, c := range in.Choices {
		if len(buttons) >= slackMaxActionItems-2 {
			break
		}
		button(c, l.Answers[c], fmt.Sprintf("answer-%d", i), "")
	}
	button("Decline", l.Decline, "decline", "")
	button("Open the session", l.Page, "open", "")
	if len(buttons) > 0 {
		p.Blocks = append(p.Blocks, SlackBlock{Type: "actions", Elements: buttons})
	}
	return p
}
