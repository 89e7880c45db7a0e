package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/exchange"
)

// positionMode reads the futures account's position mode when the connector can (every
// live adapter can), to show it in status.positionMode. The adapters place orders in the
// mode they read themselves; what the controller adds is the one case an adapter cannot
// judge alone: the mode is not the one last recorded and positions are open. Exchanges
// refuse a switch while positions are open, so such positions were opened after a switch
// made outside sigops, and which of them belong to which bot's book is not something to
// guess. The connection is then not Ready (PositionModeChanged, the recorded mode kept),
// which stops its bots from trading until the positions are closed or the mode switched
// back; the next validation (within a minute) then records the mode the exchange reports.
//
// A failed read keeps the recorded mode and the verdict: the adapters read the mode again
// before they place an order, so nothing trades on a stale one.
func (r *ExchangeConnectionReconciler) positionMode(ctx context.Context, live exchange.Live, where string, was tradingv1.PositionMode) (tradingv1.PositionMode, *outcome) {
	reader, ok := live.(exchange.ModeReader)
	if !ok {
		return "", nil
	}
	m, err := reader.AccountMode(ctx)
	if err != nil {
		log.FromContext(ctx).Info("cannot read the futures position mode; keeping the recorded one", "exchange", where)
		return "", nil
	}
	now := tradingv1.PositionModeOneWay
	if m.Mode == exchange.Hedge {
		now = tradingv1.PositionModeHedge
	}
	if was != "" && now != was && m.OpenPositions > 0 {
		o := stalledOutcome(reasonPositionModeChanged, fmt.Sprintf(
			"the futures account on %s switched from %s to %s mode and holds %d open position(s); sigops does not guess which bot they belong to: close them on the exchange or switch the mode back",
			where, was, now, m.OpenPositions))
		return "", &o
	}
	return now, nil
}
