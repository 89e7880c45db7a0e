package auth

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/runtime/errs"
)

// userDB is PostgreSQL's table of accounts: their record. Redis's user hashes are a cache
// of it (Users reads Redis and, on a miss, reads here and fills Redis again). Every change
// is made here first, so that a change PostgreSQL refused is made nowhere.
type userDB struct {
	db *pgxpool.Pool
}

// unavailable is a PostgreSQL failure as a caller sees it: the account store cannot take
// changes for a moment; nothing was changed.
func unavailable(err error) error {
	return errs.RecordUnavailable(err, "accounts cannot be changed for a moment; nothing was changed: try again")
}

const userColumns = `id, email, name, password_hash, tier, telegram_linked, generation, created_at`

const insertUser = `INSERT INTO users (` + userColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// userRow is usr's values in userColumns' order.
func userRow(usr User) []any {
	return []any{usr.ID, usr.Email, usr.Name, usr.passwordHash, usr.Tier.Slug, usr.TelegramLinked, usr.Generation, usr.CreatedAt}
}

// insert adds usr; ErrEmailTaken when its email is another account's.
func (d userDB) insert(ctx context.Context, usr User) error {
	_, err := d.db.Exec(ctx, insertUser, userRow(usr)...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return ErrEmailTaken
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// remove deletes an account row (undoing an insert whose Redis half failed).
func (d userDB) remove(ctx context.Context, id string) error {
	_, err := d.db.Exec(ctx, `DELETE FROM users WHERE id = $1`, id)
	return err
}

// get reads the account whose column equals v (id or email); ErrNotFound when none.
func (d userDB) get(ctx context.Context, column, v string) (User, error) {
	usr, err := scanUser(d.db.QueryRow(ctx, `SELECT `+userColumns+` FROM users WHERE `+column+` = $1`, v))
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, ErrNotFound
	}
	if _, bad := errs.As(err); err != nil && !bad {
		return User{}, unavailable(err)
	}
	return usr, err
}

// scanUser reads one row of userColumns; a tier this version does not know is an error
// naming the account (never SERVICE_UNAVAILABLE: retrying would not help).
func scanUser(row pgx.Row) (User, error) {
	var usr User
	var tier string
	if err := row.Scan(&usr.ID, &usr.Email, &usr.Name, &usr.passwordHash, &tier, &usr.TelegramLinked, &usr.Generation,
		&usr.CreatedAt); err != nil {
		return User{}, err
	}
	t, err := TierOf(tier)
	if err != nil {
		return User{}, errs.Wrap(err, errs.InternalError, "user %s: %v", usr.ID, err)
	}
	usr.Tier, usr.CreatedAt = t, usr.CreatedAt.UTC()
	return usr, nil
}

// setPassword stores a new hash and bumps the generation; it returns the new generation.
func (d userDB) setPassword(ctx context.Context, id, hash string) (int64, error) {
	var gen int64
	err := d.db.QueryRow(ctx, `UPDATE users SET password_hash = $2, generation = generation + 1 WHERE id = $1 RETURNING generation`,
		id, hash).Scan(&gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, unavailable(err)
	}
	return gen, nil
}

// set changes one column of an account (tier, telegram_linked).
func (d userDB) set(ctx context.Context, id, column string, v any) error {
	tag, err := d.db.Exec(ctx, `UPDATE users SET `+column+` = $2 WHERE id = $1`, id, v)
	if err != nil {
		return unavailable(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// backfill writes accounts that exist in Redis only (made before PostgreSQL held them),
// leaving every existing row alone; it returns how many it wrote.
func (d userDB) backfill(ctx context.Context, users []User) (int, error) {
	n := 0
	for _, usr := range users {
		tag, err := d.db.Exec(ctx, insertUser+` ON CONFLICT DO NOTHING`, userRow(usr)...)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

// all reads every account, in batches of restoreBatch, calling fn with each batch.
func (d userDB) all(ctx context.Context, fn func([]User) error) error {
	after := ""
	for {
		rows, err := d.db.Query(ctx, `SELECT `+userColumns+` FROM users WHERE id > $1 ORDER BY id LIMIT $2`, after, restoreBatch)
		if err != nil {
			return err
		}
		batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (User, error) { return scanUser(row) })
		if err != nil || len(batch) == 0 {
			return err
		}
		if err := fn(batch); err != nil {
			return err
		}
		after = batch[len(batch)-1].ID
	}
}

// restoreBatch is how many accounts Restore reads and caches at a time.
const restoreBatch = 500
