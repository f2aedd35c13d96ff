package a2a

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/ardgate/ardgate/guard"
)

// Client is what the task engine needs of an A2A client. Every dialect
// (v03.go, v1.go) provides it, so the engine cannot tell which protocol
// an agent speaks.
type Client interface {
	SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error)
	GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error)
	CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error)
	ResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error]
	Destroy() error
}

// Conn is one live A2A agent connection.
type Conn struct {
	card      *a2a.AgentCard
	client    Client
	streaming bool
	protocol  string // "0.3", "1.0" or "tasks"
	// fallback, when set, is the client that moves from v0.3 to tasks/send
	// at the agent's first "no such method".
	fallback *fallback
}

// Endpoint is where the agent is spoken to.
func (c *Conn) Endpoint() string { return c.card.URL }

// Protocol is the A2A version the agent is spoken to in: "0.3", "1.0",
// or "tasks" (tasks/send, of agents older than v0.3).
func (c *Conn) Protocol() string {
	if c.fallback != nil && c.fallback.fell() {
		return "tasks"
	}
	return c.protocol
}

// Skill is one skill an attached agent advertises.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// Skills lists the card's skills, text sanitised: it is registry data.
func (c *Conn) Skills() []Skill {
	out := make([]Skill, 0, len(c.card.Skills))
	for _, s := range c.card.Skills {
		sk := Skill{ID: guard.Text(s.ID, 100), Name: guard.Text(s.Name, 120), Description: guard.Text(s.Description, 300)}
		for _, t := range s.Tags {
			sk.Tags = append(sk.Tags, guard.Text(t, 60))
		}
		out = append(out, sk)
	}
	return out
}

// Close ends the connection.
func (c *Conn) Close() {
	if c.client != nil {
		_ = c.client.Destroy()
	}
}
