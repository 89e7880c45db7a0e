package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/store"
)

// Capabilities are what a tier allows (the spec's Authentication status block).
type Capabilities struct {
	AllowLiveTrading bool `json:"allowLiveTrading"`
	AllowAIBuilder   bool `json:"allowAIBuilder"`
	AllowNewsTrading bool `json:"allowNewsTrading"`
	AllowMcpServer   bool `json:"allowMcpServer"`
}

// Tier is a subscription tier (decision 12 in docs/decisions.md).
type Tier struct {
	Slug         string       `json:"slug"`
	Name         string       `json:"name"`
	Capabilities Capabilities `json:"capabilities"`
}

// Tier slugs.
const (
	TierFree = "free"
	TierPro  = "pro"
	TierTeam = "team"
)

var tiers = map[string]Tier{
	TierFree: {Slug: TierFree, Name: "Free", Capabilities: Capabilities{AllowMcpServer: true}},
	TierPro: {Slug: TierPro, Name: "Pro", Capabilities: Capabilities{
		AllowLiveTrading: true, AllowAIBuilder: true, AllowMcpServer: true}},
	TierTeam: {Slug: TierTeam, Name: "Team", Capabilities: Capabilities{
		AllowLiveTrading: true, AllowAIBuilder: true, AllowNewsTrading: true, AllowMcpServer: true}},
}

// TierOf returns the tier of a slug (case-insensitive).
func TierOf(slug string) (Tier, error) {
	t, ok := tiers[strings.ToLower(strings.TrimSpace(slug))]
	if !ok {
		return Tier{}, fmt.Errorf("unknown tier %q (free, pro or team)", slug)
	}
	return t, nil
}

// OwnerTier reads the tier of the account with this email without loading the rest of it
// (the manager checks a live bot's owner on every reconcile). found is false when there is
// no such account.
func OwnerTier(ctx context.Context, rdb redis.UniversalClient, email string) (t Tier, found bool, err error) {
	id, err := rdb.Get(ctx, store.UserByEmail(email)).Result()
	if errors.Is(err, redis.Nil) {
		return Tier{}, false, nil
	}
	if err != nil {
		return Tier{}, false, err
	}
	slug, err := rdb.HGet(ctx, store.User(id), fUserTier).Result()
	if errors.Is(err, redis.Nil) {
		return Tier{}, false, nil
	}
	if err != nil {
		return Tier{}, false, err
	}
	t, err = TierOf(slug)
	return t, err == nil, err
}

// Identity is what a request of an account needs on every call: its tier and its email in
// canonical form (bots and accounts name their owner by it).
type Identity struct {
	Email string
	Tier  Tier
}

// identityOf is the identity of an account's stored email and tier slug; ErrNotFound when
// either is missing (no such account).
func identityOf(email, slug string) (Identity, error) {
	if email == "" || slug == "" {
		return Identity{}, ErrNotFound
	}
	t, err := TierOf(slug)
	return Identity{Email: emails.Canonical(email), Tier: t}, err
}

// TierOfUser reads the tier of the account id without loading the rest of it (mcpd checks
// it on every request). ErrNotFound: no such account.
func (u *Users) TierOfUser(ctx context.Context, id string) (Tier, error) {
	slug, err := u.rdb.HGet(ctx, store.User(id), fUserTier).Result()
	if errors.Is(err, redis.Nil) {
		return Tier{}, ErrNotFound
	}
	if err != nil {
		return Tier{}, err
	}
	return TierOf(slug)
}
