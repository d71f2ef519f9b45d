package plugin

import (
	"context"
	"encoding/json"
	"errors"
)

// ApprovalRequest is what an Approver is shown.
type ApprovalRequest struct {
	CallID      string
	Tool        string
	Description string
	Tier        Tier
	// Arguments are the call's arguments, already checked to be a JSON
	// object within the size limit.
	Arguments json.RawMessage
}

// Approver decides whether a call that needs approval may run. It returns
// true to approve and false to deny; ErrCannotAsk (or any error wrapping it)
// means there is no one to ask, and the call fails with APPROVAL_REQUIRED —
// never a silent yes. Approve must honour ctx: a caller that goes away
// cancels the question.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (bool, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (bool, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (bool, error) {
	return f(ctx, req)
}

// ErrCannotAsk is returned by an Approver that has no way to ask anyone.
var ErrCannotAsk = errors.New("no way to ask for approval")

// ApproveAll approves every call. It is what `host call --yes` uses; a host
// application should prefer asking.
var ApproveAll Approver = ApproverFunc(func(context.Context, ApprovalRequest) (bool, error) { return true, nil })

// needsApproval reports whether a call to e needs approval.
func (e *entry) needsApproval() bool {
	switch e.spec.Approval {
	case ApprovalAlways:
		return true
	case ApprovalNever:
		return false
	}
	return e.spec.Tier == TierPrivileged
}
