package database_test

import (
	"context"
	"testing"

	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/database/dbtest"
)

// Every migration goes down and up again: a release can be rolled back one step at a time
// and re-applied, and the schema it leaves is the same.
func TestMigrationsAreReversible(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.New(t)
	top, err := database.Version(ctx, pool)
	if err != nil || top < 1 {
		t.Fatalf("version %d, %v", top, err)
	}
	schema := func() string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(table_name || '.' || column_name || ':' || data_type, ',' ORDER BY table_name, column_name), '')
			FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'goose_db_version'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := schema()
	for v := top; v > 0; v-- {
		if err := database.Down(ctx, pool); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
	}
	if s := schema(); s != "" {
		t.Fatalf("after every down, tables remain: %s", s)
	}
	if err := database.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if after := schema(); after != before {
		t.Fatalf("schema after down and up:\n%s\nwant\n%s", after, before)
	}
}

// Money is NUMERIC: no column of the record is floating point.
func TestNoFloatingPointColumns(t *testing.T) {
	pool := dbtest.New(t)
	var cols string
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(table_name || '.' || column_name, ','), '')
		FROM information_schema.columns WHERE table_schema = 'public' AND data_type IN ('real', 'double precision')`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if cols != "" {
		t.Fatalf("floating point columns: %s", cols)
	}
}
