package store

// The namespace of a user's bots managed through mcpd and the dashboard (fleet).
//
//	sigops:user:{<id>}:namespace   string  the Kubernetes namespace fleet made for the user
//
// It sits in the slot of the user's own hash and is written by one SET (fleet is its only
// writer), read by single GETs.

// UserNamespace is the name of the namespace that holds user id's bots managed by fleet.
func UserNamespace(userID string) string { return User(userID) + ":namespace" }
