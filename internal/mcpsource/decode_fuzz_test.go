package mcpsource

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzServerAnswers feeds what a server sends (a tools/call's raw result,
// an HTTP response body, an elicitation's requested schema) and what the
// session hands back (a question's continuation, a model's arguments for
// the resources tools) to their decoders: none may panic, a task handle
// always has its ID, a question always has choices or free text and a
// continuation that answerParams takes back.
func FuzzServerAnswers(f *testing.F) {
	f.Add([]byte(`{"resultType":"task","taskId":"t1","status":"working","pollIntervalMs":500}`), `{"type":"object","properties":{"a":{"type":"string","enum":["x","y"]}}}`, "x")
	f.Add([]byte(`{"resultType":"task","status":"working"}`), `{"type":"object","properties":{"ok":{"type":"boolean"}}}`, "yes")
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), `{"type":"object","properties":{"who":{"type":"string"}}}`, "Ada")
	f.Add([]byte(`<html>502</html>`), `[]`, "")
	f.Add([]byte(`{"server":"docs","name":"greet","arguments":{"who":1}}`), `{"type":"object","properties":{"n":{"type":"integer"}}}`, "1")
	f.Fuzz(func(t *testing.T, raw []byte, schema, answer string) {
		if task, err := taskHandle(raw); err == nil && task != nil && task.ID == "" {
			t.Fatalf("a task handle without an ID: %q", raw)
		}
		_ = httpResponse(raw)
		_ = httpServerError(raw)
		var args resourceArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			_ = argumentError(err)
		}
		if !json.Valid([]byte(schema)) {
			return
		}
		in, ok := question(mcp.InputRequestMap{"k": &mcp.ElicitParams{Message: "Q?", RequestedSchema: json.RawMessage(schema)}}, "state")
		if !ok {
			return
		}
		if len(in.Choices) == 0 && !in.AllowsFreeText {
			t.Fatalf("a question with neither choices nor free text: %+v (schema %s)", in, schema)
		}
		if !utf8.ValidString(answer) {
			return
		}
		state, responses, err := answerParams(&Answer{Continuation: in.Continuation, Answer: answer})
		boolean := strings.Join(in.Choices, ",") == "yes,no" && !in.AllowsFreeText
		if err != nil && !boolean {
			t.Fatalf("answerParams refused %q to %+v: %v", answer, in, err)
		}
		if err == nil && (state != "state" || len(responses) != 1) {
			t.Fatalf("answerParams = %q, %v", state, responses)
		}
	})
}
