package pipeline

import "errors"

var (
	errEmptyOrder = errors.New("picker returned an empty order")
	errShortBatch = errors.New("stage answered fewer cycles than the batch held")
)
