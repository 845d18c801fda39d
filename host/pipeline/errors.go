package pipeline

import "errors"

var (
	errAnswerSize = errors.New("answer does not have one entry per endpoint")
	errEmptyOrder = errors.New("picker returned an empty order")
)
