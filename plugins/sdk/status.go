package sdk

import (
	"errors"

	pb "github.com/foresight-router/foresight/proto/foresight/v1"
)

// Code classifies a stage's failure for one cycle (the wire's StatusCode).
type Code int32

// The codes a stage may answer with.
const (
	CodeOK              Code = Code(pb.StatusCode_STATUS_CODE_UNSPECIFIED)
	CodeError           Code = Code(pb.StatusCode_STATUS_CODE_ERROR)
	CodeInvalidArgument Code = Code(pb.StatusCode_STATUS_CODE_INVALID_ARGUMENT)
	CodeUnavailable     Code = Code(pb.StatusCode_STATUS_CODE_UNAVAILABLE)
)

// StatusError is a stage's own error for one cycle, as it travels in a response Status. A gRPC
// error, in contrast, means the transport failed or the plugin crashed.
type StatusError struct {
	Code    Code
	Message string
	cause   error // the in-process error it stands for, if any
}

// Error returns the message.
func (e *StatusError) Error() string { return e.Message }

// Unwrap returns the in-process error the status was made from (nil after a trip over the wire).
func (e *StatusError) Unwrap() error { return e.cause }

// InvalidArgument returns a StatusError with CodeInvalidArgument.
func InvalidArgument(err error) error {
	return &StatusError{Code: CodeInvalidArgument, Message: err.Error()}
}

// statusToProto returns nil for a nil error and otherwise the error's code (CodeError when it
// carries none) and message.
func statusToProto(err error) *pb.Status {
	if err == nil {
		return nil
	}
	code := CodeError
	var se *StatusError
	if errors.As(err, &se) && se.Code != CodeOK {
		code = se.Code
	}
	return &pb.Status{Code: pb.StatusCode(code), Message: err.Error()}
}
