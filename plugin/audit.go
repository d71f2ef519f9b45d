package plugin

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// AuditRecord is one line of the audit log: one per call, including calls
// refused before they ran. It never holds arguments, output or secret values.
type AuditRecord struct {
	Time       time.Time `json:"time"`
	CallID     string    `json:"call_id"`
	ParentID   string    `json:"parent_id,omitempty"`
	Tool       string    `json:"tool"`
	Tier       string    `json:"tier,omitempty"`
	Decision   string    `json:"decision"`
	DurationMS float64   `json:"duration_ms"`
	Code       Code      `json:"code,omitempty"`
	Limit      string    `json:"limit,omitempty"`
	BytesIn    int       `json:"bytes_in"`
	BytesOut   int       `json:"bytes_out"`
	Truncated  bool      `json:"truncated,omitempty"`
	Fuel       uint64    `json:"fuel,omitempty"`
	NeedsInput bool      `json:"needs_input,omitempty"`
	// Samples and Elicitations count the tool's requests that reached the
	// caller's client (Request.Client); never their contents.
	Samples      int `json:"samples,omitempty"`
	Elicitations int `json:"elicitations,omitempty"`
}

// Audit decisions.
const (
	DecisionAllowed          = "allowed"           // ran without needing approval
	DecisionApproved         = "approved"          // ran after approval
	DecisionDenied           = "denied"            // approver said no
	DecisionApprovalRequired = "approval_required" // needed approval, no way to ask
	DecisionRejected         = "rejected"          // refused before policy (unknown tool, bad arguments, capability)
)

// Auditor receives one record per call.
type Auditor interface {
	Audit(AuditRecord)
}

// AuditLog writes records as JSON lines to w. It is safe for concurrent use;
// write errors are counted, never returned to the caller of the tool.
type AuditLog struct {
	mu     sync.Mutex
	enc    *json.Encoder
	errors int
}

// NewAuditLog returns an AuditLog writing to w.
func NewAuditLog(w io.Writer) *AuditLog {
	return &AuditLog{enc: json.NewEncoder(w)}
}

// Audit implements Auditor.
func (a *AuditLog) Audit(r AuditRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.enc.Encode(r); err != nil {
		a.errors++
	}
}

// WriteErrors returns how many records could not be written.
func (a *AuditLog) WriteErrors() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.errors
}
