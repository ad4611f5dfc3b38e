package client

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"

	"github.com/dex-agents/dex-agent-worker/wire"

	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
)

func TestCheckMessageID(t *testing.T) {
	for _, tt := range []struct {
		id, err string
	}{
		{id: "m-1"},
		{id: "01J9Z7K3V5W8X2Y4A6B8C0D2E4"},
		{id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301"},
		{id: "client:42.retry_1"},
		{id: strings.Repeat("m", MaxMessageIDLength)},
		{id: "", err: "message ID must be 1 to 128 characters"},
		{id: strings.Repeat("m", MaxMessageIDLength+1), err: "message ID must be 1 to 128 characters"},
		{id: "a b", err: `message ID "a b" has ' ': use letters, digits, '-', '_', '.' and ':'`},
		{id: "a/b", err: `message ID "a/b" has '/'`},
		{id: "é", err: `message ID "é" has 'é'`},
	} {
		err := CheckMessageID(tt.id)
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)) {
			t.Errorf("CheckMessageID(%q) = %v, want %q", tt.id, err, tt.err)
		}
	}
}

// notReadyClient fails the first updates as the engine does when the
// workflow task that carried an update failed before it was accepted.
type notReadyClient struct {
	temporalclient.Client
	failures int
	ids      []string
}

func (c *notReadyClient) UpdateWorkflow(_ context.Context, o temporalclient.UpdateWorkflowOptions) (temporalclient.WorkflowUpdateHandle, error) {
	c.ids = append(c.ids, o.UpdateID)
	if len(c.ids) <= c.failures {
		return nil, serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to unexpected workflow task failure.")
	}
	return doneHandle{}, nil
}

type doneHandle struct {
	temporalclient.WorkflowUpdateHandle
}

func (doneHandle) Get(_ context.Context, out any) error {
	*(out.(*bool)) = true
	return nil
}

func TestUpdateRetriesAWorkflowTaskFailure(t *testing.T) {
	c := &notReadyClient{failures: 2}
	ok, err := New(c, "default", "").CloseSession(context.Background(), "s-1")
	if err != nil || !ok {
		t.Fatalf("close = %v, %v; want it applied after two retries", ok, err)
	}
	if len(c.ids) != 3 || c.ids[0] == "" || c.ids[0] != c.ids[1] || c.ids[1] != c.ids[2] {
		t.Errorf("update IDs %q: want three attempts with one ID", c.ids)
	}
	c = &notReadyClient{failures: 100}
	if _, err := New(c, "default", "").CloseSession(context.Background(), "s-1"); err == nil || len(c.ids) != updateRetries+1 {
		t.Errorf("a task that keeps failing: %v after %d attempts, want an error after %d", err, len(c.ids), updateRetries+1)
	}
}

// queryClient records the arguments of list_agent_messages queries.
type queryClient struct {
	temporalclient.Client
	reqs []wire.ListMessagesRequest
}

func (c *queryClient) QueryWorkflow(_ context.Context, _, _, _ string, args ...any) (converter.EncodedValue, error) {
	c.reqs = append(c.reqs, args[0].(wire.ListMessagesRequest))
	return emptyPage{}, nil
}

type emptyPage struct{ converter.EncodedValue }

func (emptyPage) Get(out any) error { return nil }

func TestZeroLimitReadsFifty(t *testing.T) {
	c := &queryClient{}
	s := New(c, "default", "")
	for _, limit := range []int{0, 7} {
		if _, err := s.ListAgentMessages(context.Background(), "s-1", wire.ListMessagesRequest{Limit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.reqs) != 2 || c.reqs[0].Limit != 50 || c.reqs[1].Limit != 7 {
		t.Errorf("queried %+v; want limit 50 for a zero limit, and 7 as given", c.reqs)
	}
}
