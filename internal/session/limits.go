package session

import "time"

// Limits are the timeouts and retry budgets of one Step type.
type Limits struct {
	StartToClose     time.Duration `json:"start_to_close"`
	Heartbeat        time.Duration `json:"heartbeat"`
	MaximumAttempts  int32         `json:"maximum_attempts"`
	ScheduleToClose  time.Duration `json:"schedule_to_close,omitempty"`
	InitialRetryWait time.Duration `json:"initial_retry_wait"`
}

// DefaultRunModelLimits are the spec's RunModel limits: 15 minute attempts, a
// 2 minute heartbeat timeout, 3 attempts within 30 minutes.
var DefaultRunModelLimits = Limits{
	StartToClose:     15 * time.Minute,
	Heartbeat:        2 * time.Minute,
	MaximumAttempts:  3,
	ScheduleToClose:  30 * time.Minute,
	InitialRetryWait: time.Second,
}

// DefaultToolLimits bound one tool call attempt. The tool Step heartbeats in
// the background, so a lost worker is noticed within the heartbeat timeout.
var DefaultToolLimits = Limits{
	StartToClose:     15 * time.Minute,
	Heartbeat:        time.Minute,
	MaximumAttempts:  3,
	InitialRetryWait: time.Second,
}

// CancelTaskLimits are the spec's CancelToolTask limits: 30 s attempts, 3
// attempts within 2 minutes.
var CancelTaskLimits = Limits{
	StartToClose:     30 * time.Second,
	MaximumAttempts:  3,
	ScheduleToClose:  2 * time.Minute,
	InitialRetryWait: time.Second,
}
