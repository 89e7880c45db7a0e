package errs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
)

// Every row of the spec's error tables, with the statuses of decision 2 in docs/decisions.md.
func TestCodesMatchTheSpec(t *testing.T) {
	rows := []struct {
		code    errs.Code
		status  int
		numeric int
	}{
		{errs.InvalidJSON, 400, 0},
		{errs.InvalidAction, 400, 0},
		{errs.MissingSymbol, 400, 0},
		{errs.InvalidSymbol, 400, 1001},
		{errs.InvalidWebhook, 401, 0},
		{errs.WebhookDisabled, 401, 0},
		{errs.BotPaused, 403, 2002},
		{errs.BotDisabled, 403, 0},
		{errs.BotDeleted, 403, 0},
		{errs.ExchangeDisconnected, 403, 0},
		{errs.RateLimited, 429, 4001},
		{errs.ExchangeError, 502, 3003},
		{errs.InsufficientBalance, 422, 3001},
		{errs.DCADisabled, 422, 0},
		{errs.DCAMaxLevels, 422, 0},
		{errs.DCAInvalidLevel, 422, 0},
		{errs.DCANoPosition, 422, 0},
		{errs.InvalidAmount, 422, 1002},
		{errs.InvalidPrice, 422, 1003},
		{errs.Unauthorized, 401, 2001},
		{errs.PositionNotFound, 422, 3002},
		{errs.InternalError, 500, 5001},
		{errs.TierNotAllowed, 403, 0},
	}
	for _, r := range rows {
		if got := r.code.HTTPStatus(); got != r.status {
			t.Errorf("%s: status %d, want %d", r.code, got, r.status)
		}
		if got := r.code.Numeric(); got != r.numeric {
			t.Errorf("%s: numeric %d, want %d", r.code, got, r.numeric)
		}
	}
	if errs.Code("NOPE").HTTPStatus() != http.StatusInternalServerError {
		t.Error("unknown code is not 500")
	}
}

func TestRetryCategories(t *testing.T) {
	for code, want := range map[errs.Code]bool{
		errs.InvalidAmount: false, errs.Unauthorized: false, errs.ExchangeError: false,
		errs.RateLimited: true, errs.InternalError: true,
	} {
		if code.Retry() != want {
			t.Errorf("%s: retry %v", code, !want)
		}
	}
}

func TestCodeTravelsThroughWrapping(t *testing.T) {
	base := errs.Wrap(io.ErrUnexpectedEOF, errs.ExchangeError, "order rejected")
	wrapped := fmt.Errorf("execute: %w", base)
	if errs.CodeOf(wrapped) != errs.ExchangeError {
		t.Fatalf("code lost: %v", errs.CodeOf(wrapped))
	}
	if !errors.Is(wrapped, io.ErrUnexpectedEOF) {
		t.Fatal("cause lost")
	}
	if errs.CodeOf(errors.New("boom")) != errs.InternalError {
		t.Fatal("untyped error is not INTERNAL_ERROR")
	}
	e := errs.New(errs.InsufficientBalance, "not enough USDT").WithDetails(map[string]any{"required": "10", "available": "5"})
	if e.Details["required"] != "10" || e.Error() != "INSUFFICIENT_BALANCE: not enough USDT" {
		t.Fatalf("error = %q %v", e.Error(), e.Details)
	}
}

// Decimals in details are JSON numbers with their exact text on the wire (the object MCP
// and the APIs write), while Go callers keep reading the decimals.
func TestJSONDetails(t *testing.T) {
	required := decimal.RequireFromString("1234.567890123456789")
	e := errs.New(errs.InsufficientBalance, "short").WithDetails(map[string]any{
		"required": required, "available": &required, "none": (*decimal.Decimal)(nil), "asset": "USDT", "n": 3})
	b, err := json.Marshal(e.Object())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":"INSUFFICIENT_BALANCE","numericCode":3001,"message":"short","details":` +
		`{"asset":"USDT","available":1234.567890123456789,"n":3,"none":null,"required":1234.567890123456789}}`
	if string(b) != want {
		t.Fatalf("%s\nwant %s", b, want)
	}
	if _, ok := e.Details["required"].(decimal.Decimal); !ok {
		t.Fatalf("details changed: %#v", e.Details)
	}
	if errs.JSONDetails(nil) != nil {
		t.Fatal("nil details are not nil")
	}
}
