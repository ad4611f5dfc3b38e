package devserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

const pollInterval = 25 * time.Millisecond

func dialFrontend(addr string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("devserver: cannot dial frontend %s: %w", addr, err)
	}
	return conn, nil
}

// poll calls try until it returns nil or ctx ends; it returns the last
// error from try when ctx ends first.
func poll(ctx context.Context, try func(ctx context.Context) error) error {
	var last error
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = try(callCtx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// waitReady waits until the frontend serves the namespace and history
// answers through it. (Matching is not probed: probing it would create a task
// queue record; the server's Start has already started it.)
func waitReady(ctx context.Context, conn *grpc.ClientConn, namespace string) error {
	wf := workflowservice.NewWorkflowServiceClient(conn)
	return poll(ctx, func(ctx context.Context) error {
		if _, err := wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace}); err != nil {
			return fmt.Errorf("DescribeNamespace: %w", err)
		}
		// History: a workflow that does not exist must come back NotFound.
		_, err := wf.DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
			Namespace: namespace,
			Execution: &commonpb.WorkflowExecution{WorkflowId: "devserver-readiness-probe"},
		})
		if err != nil && status.Code(err) != codes.NotFound {
			return fmt.Errorf("history not ready: %w", err)
		}
		return nil
	})
}

// ensureRetention applies the requested retention to an existing namespace.
func ensureRetention(ctx context.Context, conn *grpc.ClientConn, namespace string, retention time.Duration) error {
	wf := workflowservice.NewWorkflowServiceClient(conn)
	resp, err := wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("devserver: describe namespace %q: %w", namespace, err)
	}
	if resp.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == retention {
		return nil
	}
	_, err = wf.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: namespace,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
	})
	if err != nil {
		return fmt.Errorf("devserver: set retention of namespace %q to %v: %w", namespace, retention, err)
	}
	return nil
}

// ensureSearchAttributes registers the KeywordList search attributes that
// the namespace lacks, then waits until the frontend accepts queries on them.
func ensureSearchAttributes(ctx context.Context, conn *grpc.ClientConn, namespace string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	op := operatorservice.NewOperatorServiceClient(conn)
	list, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("devserver: list search attributes of %q: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range names {
		if t, ok := list.GetSystemAttributes()[name]; ok {
			return fmt.Errorf("devserver: search attribute %q is a system attribute (type %s)", name, t)
		}
		t, ok := list.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST
		case t != enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST:
			return fmt.Errorf("devserver: search attribute %q already exists in namespace %q with type %s, not KeywordList", name, namespace, t)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if _, err := op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	}); err != nil {
		return fmt.Errorf("devserver: add search attributes %v to namespace %q: %w", keys(missing), namespace, err)
	}
	added := time.Now()
	// The alias lives in the namespace record, which every service caches and
	// refreshes every namespaceRefreshInterval; wait until the frontend knows
	// it, then until every service has refreshed at least once since.
	wf := workflowservice.NewWorkflowServiceClient(conn)
	for name := range missing {
		query := fmt.Sprintf("%s = 'devserver-probe'", name)
		err := poll(ctx, func(ctx context.Context) error {
			_, err := wf.CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
			return err
		})
		if err != nil {
			return fmt.Errorf("devserver: search attribute %q not usable after adding it: %w", name, err)
		}
	}
	allRefreshed := added.Add(namespaceRefreshInterval + 200*time.Millisecond)
	select {
	case <-time.After(time.Until(allRefreshed)):
	case <-ctx.Done():
		return fmt.Errorf("devserver: waiting for search attributes %s: %w", keys(missing), ctx.Err())
	}
	return nil
}

func keys(m map[string]enumspb.IndexedValueType) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ", ")
}
