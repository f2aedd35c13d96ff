package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ardgate/ardgate/attach"
	"github.com/ardgate/ardgate/registry"
)

func (g *Gateway) healthTool() server.ServerTool {
	return newTool("gateway_health", "Gateway health",
		"Report the gateway's health: version, uptime, configured registries, and this session's attachments: counted by status, and each with its own.",
		noArguments, hints{readOnly: true, idempotent: true}, g.health)
}

func (g *Gateway) health(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var none struct{}
	if err := decodeArgs(req, &none); err != nil {
		return invalid("gateway_health", err), nil
	}
	type reg struct {
		ID        string                `json:"id"`
		Reachable bool                  `json:"reachable"`
		Hosts     []registry.HostHealth `json:"hosts,omitempty"`
	}
	out := struct {
		Version     string         `json:"version"`
		UptimeSec   int64          `json:"uptime_seconds"`
		Sessions    int            `json:"sessions"`
		Registries  []reg          `json:"registries"`
		Attachments map[string]int `json:"attachments"`
		Attached    []attached     `json:"attached"`
	}{
		Version:     g.opts.Version,
		UptimeSec:   int64(time.Since(g.started).Seconds()),
		Sessions:    len(g.manager.Sessions()),
		Attachments: map[string]int{attach.StatusUp: 0, attach.StatusStarting: 0, attach.StatusDown: 0},
		Attached:    []attached{},
	}
	for _, r := range g.manager.Registries {
		entry := reg{ID: r.ID(), Reachable: true} // local catalogs are in memory
		if hr, ok := r.(registry.HealthReporter); ok {
			entry.Hosts = hr.Health()
			for _, h := range entry.Hosts {
				entry.Reachable = entry.Reachable && (h.OK || h.CheckedAt.IsZero())
			}
		}
		out.Registries = append(out.Registries, entry)
	}
	if s := g.current(ctx); s != nil {
		for _, a := range s.att.Attachments() {
			status, why := a.Status()
			out.Attachments[status]++
			out.Attached = append(out.Attached, attached{Name: a.Name, URN: a.URN, Kind: a.Kind, Status: status, Why: why})
		}
		out.Attachments[attach.StatusStarting] += len(s.att.Underway())
	}
	return result(out), nil
}

// attached is one of the session's attachments in gateway_health: an
// agent's status there is what McpAgenticServer's clients route by.
type attached struct {
	Name   string `json:"name"`
	URN    string `json:"urn"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Why    string `json:"why,omitempty" shown:"1000"`
}
