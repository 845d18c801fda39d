package pipeline

import "errors"

var (
	errAnswerSize = errors.New("answer does not have one entry per endpoint")
	errEmptyOrder = errors.New("picker returned an empty order")
	errShortBatch = errors.New("stage answered fewer cycles than the batch held")
	errIndex      = errors.New("answer holds an endpoint index out of range")
)
