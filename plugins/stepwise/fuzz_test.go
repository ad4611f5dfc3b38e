package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// FuzzToolArguments feeds model-written argument text to a function tool:
// it never panics, and either calls the function with arguments that match
// the schema's required fields or returns a tool error the model sees.
func FuzzToolArguments(f *testing.F) {
	for _, seed := range []string{`{"order_id":"7"}`, `{}`, `[]`, `null`, `{"order_id":7}`, `{"order_id":"1","fields":["a"],"limit":3}`, `{"order_id":`, "\x00", `{"order_id":"7","x":{}}`} {
		f.Add(seed)
	}
	tool := MustFunctionTool("lookup", "", func(ctx context.Context, tc ToolCallContext, a lookupArgs) (string, error) {
		if a.OrderID == "" {
			return "", errors.New("called without the required order_id")
		}
		return "ok", nil
	})
	f.Fuzz(func(t *testing.T, args string) {
		out, err := tool.call(context.Background(), ToolCallContext{}, json.RawMessage(args))
		var te *pluginapi.ToolExecutionError
		switch {
		case err == nil && out != "ok":
			t.Fatalf("output %q", out)
		case err != nil && !errors.As(err, &te) && err.Error() != "called without the required order_id":
			t.Fatalf("error %v is not a tool error", err)
		}
	})
}
