package plugin

import (
	"math"
	"sync"
	"unicode/utf8"
)

// Notifier receives what a tool reports while it runs, for the caller: its
// progress, and log messages meant for the caller rather than the host's
// log. An MCP client gets them as notifications/progress (when its request
// carried a progress token) and notifications/message. Implementations must
// be safe for concurrent use and must not block for long: the tool waits.
type Notifier interface {
	// Progress reports how far the call is: progress out of total (0 when
	// the total is unknown), with an optional message.
	Progress(progress, total float64, message string)
	// Log sends a message at level: "debug", "info", "notice", "warning",
	// "error", "critical", "alert" or "emergency" (RFC 5424, as MCP).
	Log(level, message string)
}

// Caps on what one call may report (more is dropped): a tool cannot flood
// the caller's connection.
const (
	maxNotifications   = 256
	maxNotificationLen = 4 << 10
)

// callNotifier is the Notifier a tool sees (Request.Notify) when its caller
// listens. It passes what the tool reports on with the call's secret values
// redacted and messages cut to maxNotificationLen; it drops progress that
// does not increase (MCP requires it to) or is not finite (JSON has no NaN
// or infinity), reports past maxNotifications, and anything after the call
// returned.
type callNotifier struct {
	to      Notifier
	secrets *callSecrets

	mu     sync.Mutex
	sent   int
	last   float64
	began  bool // a progress notification was passed on
	closed bool
}

// discard is the Notifier of a call nobody listens to.
type discard struct{}

func (discard) Progress(float64, float64, string) {}
func (discard) Log(string, string)                {}

// Listening reports whether what a tool reports to n can reach anyone:
// false for the Notifier of a call nobody listens to, and for a Notifier
// that says so (a ListeningNotifier), so that an adapter can skip carrying
// reports from where the tool runs.
func Listening(n Notifier) bool {
	switch n := n.(type) {
	case nil, discard:
		return false
	case ListeningNotifier:
		return n.Listening()
	}
	return true
}

// ListeningNotifier is a Notifier that knows whether what it is sent
// reaches anyone (an MCP client that asked for neither progress nor log
// messages takes nothing).
type ListeningNotifier interface {
	Notifier
	Listening() bool
}

// Listening implements ListeningNotifier.
func (n *callNotifier) Listening() bool { return Listening(n.to) }

// newCallNotifier returns the notifier of a call whose caller listens on
// to, and the function that closes it when the call returns. Without a
// listener it is discard: nothing to allocate on the common path.
func newCallNotifier(to Notifier, secrets *callSecrets) (Notifier, func()) {
	if to == nil {
		return discard{}, func() {}
	}
	n := &callNotifier{to: to, secrets: secrets}
	return n, n.close
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (n *callNotifier) admit() bool {
	if n.closed || n.sent >= maxNotifications {
		return false
	}
	n.sent++
	return true
}

func (n *callNotifier) clean(msg string) string {
	if len(msg) > maxNotificationLen {
		cut := maxNotificationLen
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return n.secrets.Redact(msg)
}

// Progress implements Notifier.
func (n *callNotifier) Progress(progress, total float64, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	// Not a number a client can decode (NaN, ±Inf), or not increasing.
	if !finite(progress) || !finite(total) || (n.began && progress <= n.last) || !n.admit() {
		return
	}
	n.began, n.last = true, progress
	n.to.Progress(progress, total, n.clean(message))
}

// Log implements Notifier.
func (n *callNotifier) Log(level, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !validLogLevel(level) {
		level = "info"
	}
	if !n.admit() {
		return
	}
	n.to.Log(level, n.clean(message))
}

// close stops passing reports on: the call has returned.
func (n *callNotifier) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

func validLogLevel(l string) bool {
	switch l {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}
