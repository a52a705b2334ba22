package models

import (
	"errors"
	"fmt"
)

// ErrInvalidQuery is what every error about a query's own fields is (errors.Is): the user's to
// fix, answered as a bad request naming the query type.
var ErrInvalidQuery = errors.New("invalid query")

// InvalidQuery marks err as the query's own fault, keeping its message.
func InvalidQuery(err error) error {
	if err == nil || errors.Is(err, ErrInvalidQuery) {
		return err
	}
	return invalidQuery{err}
}

// InvalidQueryf is InvalidQuery(fmt.Errorf(format, args...)).
func InvalidQueryf(format string, args ...any) error {
	return invalidQuery{fmt.Errorf(format, args...)}
}

type invalidQuery struct{ error }

func (e invalidQuery) Is(target error) bool { return target == ErrInvalidQuery }
func (e invalidQuery) Unwrap() error        { return e.error }
