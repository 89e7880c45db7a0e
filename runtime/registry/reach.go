package registry

import "context"

// Reach is the bots an action on a bot can move: the bot itself, and each of its owner's
// bots that copies its fills (the followers index, each checked with Follows).
//
// A venue scope or a live-order confirmation must go by the highest venue an action can
// reach, not only the bot's own: a paper bot whose fills are copied to an exchange bot
// places real orders through its follower. Another owner's follower is left out: it
// copies by its own owner's choice, and the caller's delegation covers only the caller's
// accounts.
func (r *Registry) Reach(ctx context.Context, bot Bot) ([]Bot, error) {
	out := []Bot{bot}
	if bot.CopyFrom != nil {
		return out, nil // a copy never feeds another copy (Follows)
	}
	ids, err := FollowersLater(ctx, r.rdb, bot.ID)()
	if err != nil || len(ids) == 0 {
		return out, err
	}
	followers, err := r.OwnedBots(ctx, bot.Owner, ids)
	if err != nil {
		return nil, err
	}
	for _, f := range followers {
		if Follows(f, bot) {
			out = append(out, f)
		}
	}
	return out, nil
}

// OnExchange reports whether any of bots trades on an exchange account.
func OnExchange(bots []Bot) bool {
	for _, b := range bots {
		if b.Account.Kind == AccountExchange {
			return true
		}
	}
	return false
}
