package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/exchange"
)

// accept projects a validated connection with its credentials sealed under the current
// master key (bound to the connection's UID), then marks it Ready.
func (r *ExchangeConnectionReconciler) accept(ctx context.Context, conn *tradingv1.ExchangeConnection, creds exchange.Credentials, v verdict) (outcome, ctrl.Result, error) {
	blob, err := r.seal(ctx, conn, creds)
	if err != nil {
		return retryingOutcome(reasonSealFailed, "cannot store the credentials encrypted; retrying"), ctrl.Result{}, err
	}
	now := metav1.NewTime(r.now().Truncate(time.Second))
	c := connectionProjection(conn)
	c.Ready, c.Reason, c.Permissions = true, v.reason, v.perms
	c.ValidatedAt = now.UnixMilli()
	c.Sealed, c.KeyID = blob, r.Keys.CurrentKeyID()
	if err := r.save(ctx, c); err != nil {
		return retryingOutcome(reasonRuntimeStoreUnavailable, "cannot write the connection to Redis; retrying"), ctrl.Result{}, err
	}
	validations.WithLabelValues(c.Exchange, v.reason).Inc()
	r.retries.reset(conn.UID)
	conn.Status.Permissions = v.perms
	conn.Status.LastValidatedAt = &now
	conn.Status.EncryptionKeyID = c.KeyID
	if v.mode != "" {
		conn.Status.PositionMode = v.mode
	}
	return v.outcome, ctrl.Result{RequeueAfter: r.nextValidation()}, nil
}

// refuse projects a connection that cannot be used: ready=0 with the reason, and no
// credentials (Save deletes them in the same transaction), so a refused key is never usable
// even by an executor that has not seen the status yet. Then status says why.
func (r *ExchangeConnectionReconciler) refuse(ctx context.Context, conn *tradingv1.ExchangeConnection, v verdict, requeue time.Duration) (outcome, ctrl.Result, error) {
	if !v.reconciling {
		r.retries.reset(conn.UID)
	}
	conn.Status.Permissions = v.perms
	if v.answered {
		now := metav1.NewTime(r.now().Truncate(time.Second))
		conn.Status.LastValidatedAt = &now
	}
	conn.Status.EncryptionKeyID = ""
	c := connectionProjection(conn)
	c.Reason, c.Permissions = v.reason, v.perms
	if conn.Status.LastValidatedAt != nil {
		c.ValidatedAt = conn.Status.LastValidatedAt.UnixMilli()
	}
	if err := r.save(ctx, c); err != nil {
		return retryingOutcome(reasonRuntimeStoreUnavailable, "cannot write the connection to Redis; retrying"), ctrl.Result{}, err
	}
	validations.WithLabelValues(c.Exchange, v.reason).Inc()
	return v.outcome, ctrl.Result{RequeueAfter: requeue}, nil
}

// save writes the projection; its failure is the same retry for an accepted and a refused
// key.
func (r *ExchangeConnectionReconciler) save(ctx context.Context, c credentials.Connection) error {
	if err := r.Connections.Save(ctx, c); err != nil {
		return fmt.Errorf("project exchange connection: %w", err)
	}
	return nil
}

// seal returns the sealed credentials to project. The blob already in Redis is kept when it
// holds the same credentials under the current key, so that executors keep their cached
// clients; a new key or a changed Secret gives a new blob. After a master-key rotation this
// is where every connection is re-sealed (on its first reconcile, at the latest when the
// manager starts).
func (r *ExchangeConnectionReconciler) seal(ctx context.Context, conn *tradingv1.ExchangeConnection, creds exchange.Credentials) (string, error) {
	aad := credentials.AAD(string(conn.UID))
	prev, err := r.Connections.Get(ctx, string(conn.UID))
	if err != nil && !errors.Is(err, credentials.ErrNotFound) {
		return "", fmt.Errorf("read exchange connection projection: %w", err)
	}
	if prev.Sealed != "" && !r.Keys.NeedsRotation(prev.Sealed) {
		if old, err := r.Keys.OpenCredentials(prev.Sealed, aad); err == nil && credentials.Equal(old, creds) {
			return prev.Sealed, nil
		}
	}
	blob, err := r.Keys.SealCredentials(creds, aad)
	if err != nil {
		return "", fmt.Errorf("seal credentials: %w", err)
	}
	if prev.Sealed != "" && r.Keys.NeedsRotation(prev.Sealed) {
		from, _ := credentials.BlobKeyID(prev.Sealed)
		log.FromContext(ctx).Info("credentials re-sealed with the current master key",
			"connection", conn.Name, "fromKeyId", from, "toKeyId", r.Keys.CurrentKeyID())
	}
	return blob, nil
}

// connectionProjection is the part of the projection that comes from the spec.
func connectionProjection(conn *tradingv1.ExchangeConnection) credentials.Connection {
	return credentials.Connection{
		UID:             string(conn.UID),
		Namespace:       conn.Namespace,
		Name:            conn.Name,
		Exchange:        string(conn.Spec.Exchange),
		Owner:           emails.Canonical(conn.Spec.Owner),
		Testnet:         conn.Spec.Testnet,
		SpotEndpoint:    conn.Spec.Endpoints.Spot,
		FuturesEndpoint: conn.Spec.Endpoints.Futures,
	}
}
