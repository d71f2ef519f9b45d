package plugin

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code. Codes are part of toolhost's
// public contract: they never change meaning once released.
type Code string

// The error codes. docs/errors.md describes when each is returned.
const (
	CodeToolNotFound         Code = "TOOL_NOT_FOUND"
	CodeInvalidRequest       Code = "INVALID_REQUEST"
	CodeFileNotFound         Code = "FILE_NOT_FOUND"
	CodeFileTooLarge         Code = "FILE_TOO_LARGE"
	CodePermissionDenied     Code = "PERMISSION_DENIED"
	CodeCapabilityDenied     Code = "CAPABILITY_DENIED"
	CodeApprovalRequired     Code = "APPROVAL_REQUIRED"
	CodeApprovalDenied       Code = "APPROVAL_DENIED"
	CodeLimitExceeded        Code = "LIMIT_EXCEEDED"
	CodeToolExecutionFailed  Code = "TOOL_EXECUTION_FAILED"
	CodeToolExecutionTimeout Code = "TOOL_EXECUTION_TIMEOUT"
	CodeOutputInvalid        Code = "OUTPUT_INVALID"
	CodeToolUnavailable      Code = "TOOL_UNAVAILABLE"
)

// Codes lists every code, in documentation order.
func Codes() []Code {
	return []Code{
		CodeToolNotFound, CodeInvalidRequest, CodeFileNotFound, CodeFileTooLarge,
		CodePermissionDenied, CodeCapabilityDenied, CodeApprovalRequired,
		CodeApprovalDenied, CodeLimitExceeded, CodeToolExecutionFailed,
		CodeToolExecutionTimeout, CodeOutputInvalid, CodeToolUnavailable,
	}
}

// Sentinel errors, one per code. errors.Is(err, ErrX) holds for any *Error
// carrying that code, so callers need not unpack the struct:
//
//	if errors.Is(err, plugin.ErrLimitExceeded) { ... }
var (
	ErrToolNotFound         = &Error{Code: CodeToolNotFound}
	ErrInvalidRequest       = &Error{Code: CodeInvalidRequest}
	ErrFileNotFound         = &Error{Code: CodeFileNotFound}
	ErrFileTooLarge         = &Error{Code: CodeFileTooLarge}
	ErrPermissionDenied     = &Error{Code: CodePermissionDenied}
	ErrCapabilityDenied     = &Error{Code: CodeCapabilityDenied}
	ErrApprovalRequired     = &Error{Code: CodeApprovalRequired}
	ErrApprovalDenied       = &Error{Code: CodeApprovalDenied}
	ErrLimitExceeded        = &Error{Code: CodeLimitExceeded}
	ErrToolExecutionFailed  = &Error{Code: CodeToolExecutionFailed}
	ErrToolExecutionTimeout = &Error{Code: CodeToolExecutionTimeout}
	ErrOutputInvalid        = &Error{Code: CodeOutputInvalid}
	ErrToolUnavailable      = &Error{Code: CodeToolUnavailable}
)

// Error is the one error type of the pipeline and of every adapter. It carries
// a stable Code, the tool it concerns, for LIMIT_EXCEEDED the limit that was
// hit, a message written so that a model can correct its next call, and the
// underlying cause.
type Error struct {
	Code    Code
	Tool    string // tool name, when known
	Limit   string // for CodeLimitExceeded: which limit ("memory", "output", "fuel", "http_requests", ...)
	Message string
	Err     error // underlying cause, may be nil
}

// Errorf returns an *Error with the given code and a formatted message. A %w
// verb in format sets Err, as with fmt.Errorf.
func Errorf(code Code, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	e := &Error{Code: code, Message: wrapped.Error()}
	if u := errors.Unwrap(wrapped); u != nil {
		e.Err = u
	}
	return e
}

// LimitError returns a LIMIT_EXCEEDED error naming the limit that was hit.
func LimitError(limit string, format string, args ...any) *Error {
	e := Errorf(CodeLimitExceeded, format, args...)
	e.Limit = limit
	return e
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if msg == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + msg
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code. Together with
// the sentinels this makes errors.Is(err, ErrLimitExceeded) work for any
// limit error, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Limit == "" || t.Limit == e.Limit)
}

// CodeOf returns the code of err: the code of the first *Error in its chain,
// CodeToolExecutionTimeout for a passed deadline, and CodeToolExecutionFailed
// for anything else. CodeOf(nil) is "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if isDeadline(err) {
		return CodeToolExecutionTimeout
	}
	return CodeToolExecutionFailed
}

// asError converts any error into an *Error for tool, keeping an existing
// code and filling in the tool name.
func asError(tool string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Tool == "" {
			c := *e
			c.Tool = tool
			return &c
		}
		return e
	}
	code := CodeOf(err)
	return &Error{Code: code, Tool: tool, Message: err.Error(), Err: err}
}
