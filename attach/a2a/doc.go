// Package a2a is ardgate's A2A client and the task engine built on it:
// reading an agent's card, connecting to it in the dialect it speaks, and
// keeping a session's tasks (spawn, wait, reply, cancel, list) with the
// views the task tools show.
//
// Each dialect is one file behind the Client interface: v03.go speaks A2A
// v0.3 JSON-RPC through a2a-go, v1.go speaks v1.0 JSON-RPC, tasksend.go
// the tasks/send methods of older agents (OpenFang's, kagent's); Dial
// picks one from the card (card.go) unless told which. The engine sees
// only Client, so a dialect added changes no task code.
//
// The package holds no session state of its own but its task stores:
// which agents are attached, their status, and how a connection is
// reached again are its owner's (attach), seen through Agent. It imports
// a2a-go, guard (and guard/jsonrpc for the message cap) and attach/fault;
// never attach, which imports it.
package a2a
