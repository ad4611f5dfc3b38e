package httpclient

import (
	"context"
	"net/http"
)

// Agent is one agent of GET /v1/agents.
type Agent struct {
	Name     string `json:"name"`
	FlowType string `json:"flow_type"`
}

// Agents lists the agents the token may reach, with their flow types.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out struct {
		Agents []Agent `json:"agents"`
	}
	if err := c.call(ctx, http.MethodGet, "/v1/agents", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Agents, nil
}
