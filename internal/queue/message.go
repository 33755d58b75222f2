package queue

import (
	"encoding/json"
	"fmt"
)

// Verbs of the messages the API sends to a GPU type's scheduler.
const (
	// VerbJob asks the scheduler to reconcile one job with its stored
	// record: admit it if new, cancel it if deletion was requested, apply
	// a priority change.
	VerbJob = "job"
	// VerbSettings asks the scheduler to reload its stored settings
	// (algorithm, rate limit).
	VerbSettings = "settings"
)

// Message is a notification to a scheduler. It carries no state: the
// store is the source of truth, so a message delivered twice, late, or
// after a restart does no harm.
type Message struct {
	Verb string `json:"verb"`
	Job  string `json:"job,omitempty"`
}

// SchedulerQueue names the queue a GPU type's scheduler consumes.
func SchedulerQueue(gpuType string) string { return "voda.scheduler." + gpuType }

// Encode returns the message's wire form.
func (m Message) Encode() []byte {
	b, _ := json.Marshal(m) // two strings cannot fail to encode
	return b
}

// DecodeMessage parses a message and checks its verb.
func DecodeMessage(b []byte) (Message, error) {
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	switch {
	case m.Verb == VerbJob && m.Job != "":
	case m.Verb == VerbSettings:
	default:
		return Message{}, fmt.Errorf("decode message: bad verb %q or job %q", m.Verb, m.Job)
	}
	return m, nil
}
