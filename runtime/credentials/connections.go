package credentials

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/owners"
	"github.com/sigops/sigops/runtime/store"
)

// Fields of the connection hash (store.ExchangeConnection).
const (
	fieldNamespace       = "namespace"
	fieldName            = "name"
	fieldExchange        = "exchange"
	fieldOwner           = "owner"
	fieldTestnet         = "testnet"
	fieldSpotEndpoint    = "endpointSpot"
	fieldFuturesEndpoint = "endpointFutures"
	fieldReady           = "ready"
	fieldReason          = "reason"
	fieldPermissions     = "permissions"
	fieldValidatedAt     = "validatedAt"
	fieldCredentials     = "credentials"
	fieldKeyID           = "keyId"
)

// ErrNotFound: no projection of that connection.
var ErrNotFound = errors.New("exchange connection not found")

// Connection is an ExchangeConnection as the runtime sees it. The controller writes it; the
// executor reads it to trade. Sealed is set only while Ready.
type Connection struct {
	// UID is the ExchangeConnection's Kubernetes UID (a bot's Account.ID).
	UID       string
	Namespace string
	Name      string
	// Exchange is spec.exchange (binance, bybit, okx): the Connector to use.
	Exchange string
	// Owner is the owner's email, lower-cased.
	Owner           string
	Testnet         bool
	SpotEndpoint    string
	FuturesEndpoint string
	// Ready: the exchange accepted the key and its permissions are acceptable.
	Ready bool
	// Reason is the connection's Ready reason (Validated, WithdrawalPermissionEnabled, ...).
	Reason string
	// Permissions as exchange.Permissions.List names them.
	Permissions []string
	// ValidatedAt is when the exchange last answered about the key (ms since epoch).
	ValidatedAt int64
	// Sealed is the credentials blob (SealCredentials with AAD(UID)); KeyID names its key.
	Sealed string
	KeyID  string
}

// Endpoints are the connection's base-URL overrides, as a Connector takes them.
func (c Connection) Endpoints() exchange.Endpoints {
	return exchange.Endpoints{Spot: c.SpotEndpoint, Futures: c.FuturesEndpoint, Testnet: c.Testnet}
}

// CanTrade reports whether the key holds the trade permission of kind.
func (c Connection) CanTrade(kind exchange.Kind) bool {
	return slices.Contains(c.Permissions, TradePermission(kind))
}

// Connections reads and writes connection projections in Redis, with the index of each
// owner's connections (store.OwnerConnections).
type Connections struct {
	rdb    redis.UniversalClient
	owners owners.Index
}

// NewConnections returns a store on rdb.
func NewConnections(rdb redis.UniversalClient) *Connections {
	return &Connections{rdb: rdb, owners: owners.New(rdb, store.OwnerConnections, fieldOwner)}
}

// Save writes c and its owner's index entry. A connection that is not Ready, or has no
// sealed credentials, loses its credentials fields in the same transaction: a refused key
// is never left usable.
func (s *Connections) Save(ctx context.Context, c Connection) error {
	if c.UID == "" {
		return errors.New("save exchange connection: empty UID")
	}
	key := store.ExchangeConnection(c.UID)
	if err := s.owners.Before(ctx, key, c.UID, c.Owner); err != nil {
		return err
	}
	usable := c.Ready && c.Sealed != ""
	fields := []any{
		fieldNamespace, c.Namespace,
		fieldName, c.Name,
		fieldExchange, c.Exchange,
		fieldOwner, emails.Canonical(c.Owner),
		fieldTestnet, flag(c.Testnet),
		fieldSpotEndpoint, c.SpotEndpoint,
		fieldFuturesEndpoint, c.FuturesEndpoint,
		fieldReady, flag(usable),
		fieldReason, c.Reason,
		fieldPermissions, strings.Join(c.Permissions, ","),
		fieldValidatedAt, strconv.FormatInt(c.ValidatedAt, 10),
	}
	if usable {
		fields = append(fields, fieldCredentials, c.Sealed, fieldKeyID, c.KeyID)
	}
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.owners.StageNote(ctx, p, key, c.Owner)
		if !usable {
			p.HDel(ctx, key, fieldCredentials, fieldKeyID)
		}
		p.HSet(ctx, key, fields...)
		return nil
	}); err != nil {
		return err
	}
	return s.owners.After(ctx, key, c.UID, c.Owner)
}

// Get reads one connection.
func (s *Connections) Get(ctx context.Context, uid string) (Connection, error) {
	if uid == "" {
		return Connection{}, ErrNotFound
	}
	return readLater(ctx, s.rdb, uid)()
}

// readLater queues Get's read on c (a pipeline) and returns the decoder to call once the
// pipeline has run.
func readLater(ctx context.Context, c redis.Cmdable, uid string) func() (Connection, error) {
	cmd := c.HGetAll(ctx, store.ExchangeConnection(uid))
	return func() (Connection, error) { return parseConnection(uid, cmd) }
}

func parseConnection(uid string, cmd *redis.MapStringStringCmd) (Connection, error) {
	v, err := cmd.Result()
	if err != nil {
		return Connection{}, err
	}
	if len(v) == 0 {
		return Connection{}, ErrNotFound
	}
	c := Connection{
		UID:             uid,
		Namespace:       v[fieldNamespace],
		Name:            v[fieldName],
		Exchange:        v[fieldExchange],
		Owner:           v[fieldOwner],
		Testnet:         v[fieldTestnet] == "1",
		SpotEndpoint:    v[fieldSpotEndpoint],
		FuturesEndpoint: v[fieldFuturesEndpoint],
		Ready:           v[fieldReady] == "1",
		Reason:          v[fieldReason],
		Sealed:          v[fieldCredentials],
		KeyID:           v[fieldKeyID],
	}
	if p := v[fieldPermissions]; p != "" {
		c.Permissions = strings.Split(p, ",")
	}
	c.ValidatedAt, _ = strconv.ParseInt(v[fieldValidatedAt], 10, 64)
	return c, nil
}

// ListByOwner lists the owner's connections, by UID. An index entry whose projection is
// gone or names another owner (a change of owner in progress) is left out.
func (s *Connections) ListByOwner(ctx context.Context, owner string) ([]Connection, error) {
	uids, err := s.owners.IDs(ctx, owner)
	if err != nil {
		return nil, err
	}
	slices.Sort(uids)
	reads := make([]func() (Connection, error), len(uids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, uid := range uids {
			reads[i] = readLater(ctx, p, uid)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]Connection, 0, len(uids))
	for _, read := range reads {
		c, err := read()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if emails.Same(c.Owner, owner) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Delete removes a connection's owner index entry, then its projection (the connection was
// deleted).
func (s *Connections) Delete(ctx context.Context, uid string) error {
	key := store.ExchangeConnection(uid)
	if err := s.owners.Remove(ctx, key, uid); err != nil {
		return err
	}
	return s.rdb.Del(ctx, key).Err()
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// View is a connection as its owner may see it (mcpd, the dashboard): what it is, whether
// the exchange accepted the key, the key's permissions and the markets it may trade.
// It holds nothing of the credentials: no key, no sealed blob, no key ID.
type View struct {
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Exchange  string `json:"exchange"`
	Testnet   bool   `json:"testnet"`
	// Status is "ready" when the exchange accepted the key and its permissions are
	// acceptable, "not_ready" otherwise; Reason says why (Validated,
	// WithdrawalPermissionEnabled, ...).
	Status      string   `json:"status"`
	Reason      string   `json:"reason,omitempty"`
	Permissions []string `json:"permissions"`
	// Markets are the market kinds the key may trade (spot, futures).
	Markets []string `json:"markets"`
	// ValidatedAt is when the exchange last answered about the key (ms since epoch; 0:
	// never).
	ValidatedAt int64 `json:"validatedAt"`
}

// Statuses of a View.
const (
	StatusReady    = "ready"
	StatusNotReady = "not_ready"
)

// View is c without its credentials.
func (c Connection) View() View {
	v := View{ID: c.UID, Namespace: c.Namespace, Name: c.Name, Exchange: c.Exchange, Testnet: c.Testnet,
		Status: StatusNotReady, Reason: c.Reason, Permissions: slices.Clone(c.Permissions), Markets: []string{},
		ValidatedAt: c.ValidatedAt}
	if c.Ready {
		v.Status = StatusReady
	}
	if v.Permissions == nil {
		v.Permissions = []string{}
	}
	for _, k := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		if c.CanTrade(k) {
			v.Markets = append(v.Markets, string(k))
		}
	}
	return v
}

// OwnedBy is the owner's connection uid, or ErrNotFound when it is missing or another
// owner's (owner: an e-mail, compared in canonical form): one answer for both.
func (s *Connections) OwnedBy(ctx context.Context, uid, owner string) (Connection, error) {
	c, err := s.Get(ctx, uid)
	if err != nil {
		return Connection{}, err
	}
	if !emails.Same(c.Owner, owner) {
		return Connection{}, ErrNotFound
	}
	return c, nil
}
