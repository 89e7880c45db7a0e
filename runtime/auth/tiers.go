package auth

import (
	"fmt"
	"strings"
)

// Capabilities are what a tier allows (the spec's Authentication status block).
type Capabilities struct {
	AllowLiveTrading bool `json:"allowLiveTrading"`
	AllowAIBuilder   bool `json:"allowAIBuilder"`
	AllowNewsTrading bool `json:"allowNewsTrading"`
	AllowMcpServer   bool `json:"allowMcpServer"`
}

// Tier is a subscription tier (DESIGN.md decision 12).
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
