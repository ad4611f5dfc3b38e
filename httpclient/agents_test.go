package httpclient

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAgents(t *testing.T) {
	rec := &recorder{status: 200, body: `{"agents":[{"name":"orders","flow_type":"OrdersAgent"},{"name":"echo","flow_type":"EchoAgent"}]}`}
	c := rec.server(t)
	got, err := c.Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Agent{{Name: "orders", FlowType: "OrdersAgent"}, {Name: "echo", FlowType: "EchoAgent"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Agents (-want +got):\n%s", diff)
	}
	if rec.req.Method != "GET" || rec.req.URL.Path != "/v1/agents" || rec.req.Header.Get("Authorization") != "Bearer "+testToken {
		t.Errorf("request: %s %s %v", rec.req.Method, rec.req.URL.Path, rec.req.Header)
	}
	rec.status, rec.body = 401, `{"error":{"code":"unauthorized","message":"invalid token"}}`
	if _, err := c.Agents(context.Background()); err == nil || err.Error() != "invalid token" {
		t.Errorf("401: error = %v", err)
	}
}
