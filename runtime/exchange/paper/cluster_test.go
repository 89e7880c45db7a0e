package paper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// On a Redis Cluster a paper fill waits for the replica of its account's slot: that slot
// has a master of its own, which the signal's confirmation on its bot's slot does not
// cover, so a fill acknowledged by that master alone could be lost in its failover while
// the book keeps it. With the replica there the fill returns; with it gone the fill fails
// (ErrNotReplicated, retried by the executor as any store failure) instead of being
// acknowledged alone.
func TestClusterFillWaitsForTheAccountsReplica(t *testing.T) {
	s, err := storetest.StartReplicatedCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ctx := context.Background()
	rdb, err := store.Connect(ctx, store.Options{ClusterAddrs: s.ClusterAddrs, ReplicaAckTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if !store.ClusterWaits(rdb) {
		t.Fatal("a Cluster whose masters have replicas does not wait")
	}
	ensureAccount(t, rdb, "10000")
	px := prices{}
	px.set(exchange.Spot, "BTC/USDT", "65000")
	x := paper.NewExchange(rdb, "acct", "bot-1", px)
	buy := exchange.OrderRequest{ClientOrderID: "c-1", Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Market, Amount: testkit.D("0.01")}
	if o := place(t, x, buy); o.Status != exchange.StatusFilled {
		t.Fatalf("fill with the replica there: %+v", o)
	}
	// The account's master loses its replica: the next fill is not acknowledged alone.
	node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, store.PaperAccount("acct"))
	if err != nil {
		t.Fatal(err)
	}
	replica := ""
	for i, a := range s.ClusterAddrs {
		if a == node.Options().Addr {
			replica = s.Replicas[i]
		}
	}
	if err := s.KillNode(replica); err != nil {
		t.Fatal(err)
	}
	buy.ClientOrderID = "c-2"
	if _, err := x.PlaceOrder(ctx, buy); !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("a fill without the account's replica: %v, want ErrNotReplicated", err)
	}
}
