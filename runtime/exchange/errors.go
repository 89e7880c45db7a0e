package exchange

import "errors"

// ErrOrderNotFound: no order with that client order ID.
var ErrOrderNotFound = errors.New("order not found")
