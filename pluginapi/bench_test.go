package pluginapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRunModelStepTranscript measures handing a transcript of n
// messages of 2 KiB (assistant messages with an item of 2 KiB more) to a
// runner that does nothing with it, over go-plugin's gRPC connection: the
// part of a model call's cost that grows with the transcript.
func BenchmarkRunModelStepTranscript(b *testing.B) {
	for _, n := range []int{20, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			m := &mockRunner{RunModelStepF: func(_ context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error) {
				return &RunModelStepResponse{TurnCompleted: &TurnCompleted{NewMessages: []FrameworkMessage{{Role: RoleAssistant, Text: "ok"}}}}, nil
			}}
			c, _ := connect(b, m)
			text := strings.Repeat("x", 2048)
			turn := TurnContext{Agent: "a", SessionID: "s", TurnID: "turn-1", Attempt: 1}
			for i := range n {
				msg := Message{Sequence: int64(i + 1), Role: RoleUser, Text: text, TurnID: "turn-1"}
				if i%2 == 1 {
					msg.Role, msg.Item = RoleAssistant, `{"type":"model_output","output":{"items":["`+text+`"]}}`
				}
				turn.Messages = append(turn.Messages, msg)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := c.RunModelStep(context.Background(), &RunModelStepRequest{Turn: turn}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
