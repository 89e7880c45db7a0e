// Package fleet changes SignalBots on behalf of their owners: the Go API behind mcpd's bot
// tools and the dashboard's bot pages. Changes go through the Kubernetes API server, so the
// operator stays the one writer of runtime state and the CRD schema and CEL rules validate
// every spec; reads of a bot come from its Redis projection (runtime/registry).
//
// Two kinds of bot meet here (docs/decisions.md, "Bots managed through MCP and the
// dashboard", decision 17):
//   - bots fleet created carry LabelManagedBy=ManagedBySigops and live in the owner's own
//     namespace (NamespaceFor); they can be changed and deleted;
//   - bots a platform team applied (no such label) belong to their repository: they can be
//     read, paused and resumed, and every change is refused with errs.ManagedByGitOps.
//
// A bot of another owner answers exactly like a missing one (errs.NotFound).
//
// The daemons that use fleet (mcpd, authd) need these rights; `make manifests` generates its
// ClusterRole sigops-mcpd (config/rbac/mcpd) from these markers:
//
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=signalbots,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=paperaccounts,verbs=get;list;create
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections,verbs=get;list;create;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch;delete
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// Labels fleet sets.
const (
	// LabelManagedBy with the value ManagedBySigops marks a SignalBot fleet created and may
	// change; a bot without it is GitOps-managed.
	LabelManagedBy  = "trading.sigops.dev/managed-by"
	ManagedBySigops = "sigops"
	// LabelUser on a namespace names the user ID it belongs to.
	LabelUser = "trading.sigops.dev/user"
)

// namespacePrefix starts every user namespace: "sigops-u-" and 32 hex digits (41
// characters), a DNS-1123 label whatever the user ID's characters.
const namespacePrefix = "sigops-u-"

// Caller is the authenticated user a call acts for.
type Caller struct {
	UserID string
	Email  string
}

// Options wire a Fleet.
type Options struct {
	// Client talks to the API server; its scheme must know the sigops kinds.
	Client client.Client
	Redis  redis.UniversalClient
	// Now is the clock of pauses and annotation values; time.Now when nil.
	Now func() time.Time
}

// Fleet manages users' bots.
type Fleet struct {
	k8s      client.Client
	rdb      redis.UniversalClient
	registry *registry.Registry
	now      func() time.Time
}

// New returns a Fleet.
func New(o Options) *Fleet {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &Fleet{k8s: o.Client, rdb: o.Redis, registry: registry.New(o.Redis), now: now}
}

// NamespaceFor is the namespace of user id's bots: namespacePrefix and the first 16 bytes
// of the SHA-256 of the ID in hex. A hash keeps the name a valid DNS-1123 label of fixed
// length for any ID, and 128 bits make two users sharing one impossible in practice.
func NamespaceFor(userID string) string {
	sum := sha256.Sum256([]byte(userID))
	return namespacePrefix + hex.EncodeToString(sum[:16])
}

// Namespace is the caller's namespace, created (with LabelUser) and recorded on the account
// (store.UserNamespace) on first use. A namespace of that name that names another user is
// refused rather than shared.
func (f *Fleet) Namespace(ctx context.Context, c Caller) (string, error) {
	if c.UserID == "" || c.Email == "" {
		return "", errs.New(errs.Unauthorized, "no caller")
	}
	key := store.UserNamespace(c.UserID)
	recorded, err := f.rdb.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", err
	}
	name := NamespaceFor(c.UserID)
	if recorded == name {
		return name, nil
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelUser: userLabel(c.UserID)}}}
	if err := f.k8s.Create(ctx, ns); apierrors.IsAlreadyExists(err) {
		if err := f.k8s.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			return "", err
		}
		if ns.Labels[LabelUser] != userLabel(c.UserID) {
			return "", errs.New(errs.InternalError, "namespace %s exists and belongs to another user", name)
		}
	} else if err != nil {
		return "", err
	}
	if err := f.rdb.Set(ctx, key, name, 0).Err(); err != nil {
		return "", err
	}
	return name, nil
}

// userLabel is the user ID as a label value: the ID itself when it is one (a UUID is), else
// the namespace's hash, so that the label always names the user unambiguously.
func userLabel(id string) string {
	if len(id) <= 63 && labelValue(id) {
		return id
	}
	return NamespaceFor(id)[len(namespacePrefix):]
}

func labelValue(s string) bool {
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || i == len(s)-1 || (r != '-' && r != '_' && r != '.')) {
			return false
		}
	}
	return s != ""
}
