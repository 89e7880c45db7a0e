// Package owners keeps the owner index of one kind of account: a Redis set of account IDs
// per owner, beside each account's hash, which names its owner in a field. The paper
// accounts (runtime/exchange/paper) and exchange connections (runtime/credentials) use it,
// so that a user's accounts are listed without the Kubernetes API.
//
// The set and the hash are in different Cluster slots, so a write is a sequence of
// single-slot steps (Before, the account's own transaction with StageNote, After). A change
// of owner is noted in the hash by the same transaction that writes the new owner, and the
// note is cleared once the old owner's set has lost the ID: a crash between the steps leaves
// the note for the next write to finish. Readers check the hash's owner, so a set member
// not yet removed never shows another user's account.
package owners

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/emails"
)

// FieldReplacedOwner is the hash field noting an owner whose set still lists the account.
const FieldReplacedOwner = "ownerReplaced"

// Index is the owner index of one kind of account.
type Index struct {
	rdb        redis.UniversalClient
	set        func(owner string) string
	ownerField string
}

// New is the index whose sets are named by set (a runtime/store function) and whose
// accounts' hashes name their owner in ownerField.
func New(rdb redis.UniversalClient, set func(owner string) string, ownerField string) Index {
	return Index{rdb: rdb, set: set, ownerField: ownerField}
}

// Before runs before the account's hash (hashKey) is written with owner: it finishes a
// change of owner left half done and adds id to owner's set. The transaction that then
// writes the hash must queue StageNote before its write of the owner field, and After
// must follow it.
func (x Index) Before(ctx context.Context, hashKey, id, owner string) error {
	if err := x.settle(ctx, hashKey, id, owner); err != nil {
		return err
	}
	return x.rdb.SAdd(ctx, x.set(owner), id).Err()
}

// noteScript notes, in the hash KEYS[1], the owner the write replaces. ARGV: the owner
// field, the new owner, the note field. It runs inside the hash's MULTI, where a script
// is sent whole (EVAL): an EVALSHA refused inside MULTI would fail the transaction.
const noteScript = `
local prev = redis.call('HGET', KEYS[1], ARGV[1])
if prev and prev ~= '' and prev ~= ARGV[2] then redis.call('HSET', KEYS[1], ARGV[3], prev) end
return 0
`

// StageNote queues, in the transaction p that writes the hash's owner field (before that
// write), the note of the owner being replaced.
func (x Index) StageNote(ctx context.Context, p redis.Pipeliner, hashKey, owner string) {
	p.Eval(ctx, noteScript, []string{hashKey}, x.ownerField, emails.Canonical(owner), FieldReplacedOwner)
}

// After runs after the hash's transaction: the replaced owner's set loses id and the note
// is cleared.
func (x Index) After(ctx context.Context, hashKey, id, owner string) error {
	return x.settle(ctx, hashKey, id, owner)
}

// settle takes id out of the noted owner's set, unless that owner is keep (the account went
// back to it), and clears the note.
func (x Index) settle(ctx context.Context, hashKey, id, keep string) error {
	noted, err := x.rdb.HGet(ctx, hashKey, FieldReplacedOwner).Result()
	if errors.Is(err, redis.Nil) || (err == nil && noted == "") {
		return nil
	}
	if err != nil {
		return err
	}
	if !emails.Same(noted, keep) {
		if err := x.rdb.SRem(ctx, x.set(noted), id).Err(); err != nil {
			return err
		}
	}
	return x.rdb.HDel(ctx, hashKey, FieldReplacedOwner).Err()
}

// Remove takes id out of the sets of the owner and noted owner of its hash; the caller
// deletes the hash afterwards, so that a crash in between leaves the hash to read again.
func (x Index) Remove(ctx context.Context, hashKey, id string) error {
	v, err := x.rdb.HMGet(ctx, hashKey, x.ownerField, FieldReplacedOwner).Result()
	if err != nil {
		return err
	}
	_, err = x.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range v {
			if s, _ := o.(string); s != "" {
				p.SRem(ctx, x.set(s), id)
			}
		}
		return nil
	})
	return err
}

// IDs lists the account IDs in owner's set. A member may be stale for a moment (see the
// package comment): the caller checks the owner its hash names.
func (x Index) IDs(ctx context.Context, owner string) ([]string, error) {
	return x.rdb.SMembers(ctx, x.set(owner)).Result()
}
