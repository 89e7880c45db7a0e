package position

// DecodeTradeResult exposes decodeTradeResult to the tests.
var DecodeTradeResult = decodeTradeResult
