package store

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultAddr is the server a process reaches when no Redis flag names one.
const DefaultAddr = "127.0.0.1:6379"

// Options are how a process reaches Redis: one server, a master that Sentinels watch, or a
// Redis Cluster. Every daemon and command takes them through BindFlags, so they all read
// the same flags the same way.
type Options struct {
	// Addr is a single server's host:port. Empty means DefaultAddr, unless SentinelAddrs or
	// ClusterAddrs name the servers.
	Addr string
	// DB is the database number; a Cluster has database 0 only.
	DB int
	// PasswordFile holds the password (a mounted Secret); empty means none. The password
	// never travels in a flag, so it does not show in process listings.
	PasswordFile string
	// SentinelPasswordFile holds the password the Sentinels ask for (their requirepass; a
	// mounted Secret, often the same file as PasswordFile); empty means they ask for none.
	SentinelPasswordFile string
	// sentinelPassword is SentinelPasswordFile's content, read by Connect.
	sentinelPassword string
	// SentinelAddrs are Sentinels watching the master MasterName: the client asks them where
	// the master is and follows them to the new one after a failover.
	SentinelAddrs []string
	MasterName    string
	// ClusterAddrs are seed nodes of a Redis Cluster; the client learns the others from them.
	ClusterAddrs []string
	// PoolSize is the connection pool per server (per node of a Cluster); 0 keeps go-redis's
	// default of 10 per CPU. It is no flag: a process sizes its own clients.
	PoolSize int
	// NoRetry stops the client from sending a command again by itself after a network
	// error. A command that is not idempotent needs it: a queue read (XREADGROUP) whose
	// reply was lost has delivered its entries all the same, and a silent retry reads past
	// them; the caller must see the error and act on it. No flag either.
	NoRetry bool
	// MinReplicasAck is how many replicas must hold a queued signal (and a live order's
	// staging, and a finished signal's writes) before it is acknowledged: a number, or "" /
	// ReplicasAuto for one through Sentinels or when the master has replicas, and none
	// otherwise. On a Cluster each write waits on its slot's master (cluster_ack.go).
	MinReplicasAck string
	// ReplicaAckTimeout bounds the wait for those replicas; 0 is DefaultReplicaAckTimeout.
	ReplicaAckTimeout time.Duration
}

// Flag names, for messages and for Args.
const (
	flagAddr          = "redis-addr"
	flagDB            = "redis-db"
	flagPasswordFile  = "redis-password-file"
	flagSentinelPass  = "redis-sentinel-password-file"
	flagSentinelAddrs = "redis-sentinel-addrs"
	flagMasterName    = "redis-master-name"
	flagClusterAddrs  = "redis-cluster-addrs"

	flagMinReplicasAck    = "redis-min-replicas-ack"
	flagReplicaAckTimeout = "redis-replica-ack-timeout"
)

// BindFlags registers the Redis flags on fs, writing into o.
func BindFlags(fs *flag.FlagSet, o *Options) {
	fs.StringVar(&o.Addr, flagAddr, o.Addr, "host:port of a single Redis server (default "+DefaultAddr+" when neither --"+flagSentinelAddrs+" nor --"+flagClusterAddrs+" is given)")
	fs.IntVar(&o.DB, flagDB, o.DB, "Redis database (a Redis Cluster has 0 only)")
	fs.StringVar(&o.PasswordFile, flagPasswordFile, o.PasswordFile, "file holding the Redis password (mount a Secret); a trailing newline is dropped")
	fs.StringVar(&o.SentinelPasswordFile, flagSentinelPass, o.SentinelPasswordFile, "file holding the password the Sentinels ask for (their requirepass; often the same file as --"+flagPasswordFile+"); empty: they ask for none")
	fs.Func(flagSentinelAddrs, "comma-separated host:port of Redis Sentinels; with --"+flagMasterName+", the client follows the master through failovers", func(s string) error {
		o.SentinelAddrs = splitAddrs(s)
		return nil
	})
	fs.StringVar(&o.MasterName, flagMasterName, o.MasterName, "name of the master the Sentinels watch")
	fs.Func(flagClusterAddrs, "comma-separated host:port of Redis Cluster nodes to discover the cluster from", func(s string) error {
		o.ClusterAddrs = splitAddrs(s)
		return nil
	})
	fs.StringVar(&o.MinReplicasAck, flagMinReplicasAck, o.MinReplicasAck, "replicas that must hold a queued signal, a live order's staging or a finished signal's writes before it is acknowledged (Redis WAIT): a number, or \""+ReplicasAuto+"\" (the default) for 1 through Sentinels or when the master has replicas, and 0 on a single server without any; on a Redis Cluster each write waits on its slot's master, auto being 1 where that master has replicas")
	fs.DurationVar(&o.ReplicaAckTimeout, flagReplicaAckTimeout, o.ReplicaAckTimeout, "longest wait for --"+flagMinReplicasAck+" replicas; a write they miss is answered as a store failure (0: "+DefaultReplicaAckTimeout.String()+", at most "+MaxReplicaAckTimeout.String()+")")
}

// splitAddrs reads a comma-separated list; blank items are dropped, so a trailing comma is
// harmless.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Args are the flags that give o to a process which binds them with BindFlags (the local
// stack and the tests start daemons with them).
func (o Options) Args() []string {
	var args []string
	add := func(name, value string) { args = append(args, "--"+name+"="+value) }
	if o.Addr != "" {
		add(flagAddr, o.Addr)
	}
	if o.DB != 0 {
		add(flagDB, strconv.Itoa(o.DB))
	}
	if o.PasswordFile != "" {
		add(flagPasswordFile, o.PasswordFile)
	}
	if o.SentinelPasswordFile != "" {
		add(flagSentinelPass, o.SentinelPasswordFile)
	}
	if len(o.SentinelAddrs) > 0 {
		add(flagSentinelAddrs, strings.Join(o.SentinelAddrs, ","))
	}
	if o.MasterName != "" {
		add(flagMasterName, o.MasterName)
	}
	if len(o.ClusterAddrs) > 0 {
		add(flagClusterAddrs, strings.Join(o.ClusterAddrs, ","))
	}
	if o.MinReplicasAck != "" {
		add(flagMinReplicasAck, o.MinReplicasAck)
	}
	if o.ReplicaAckTimeout != 0 {
		add(flagReplicaAckTimeout, o.ReplicaAckTimeout.String())
	}
	return args
}

// Validate rejects flags that contradict each other: a process must not silently pick one
// of two deployments it was told about.
func (o Options) Validate() error {
	sentinel, cluster := len(o.SentinelAddrs) > 0, len(o.ClusterAddrs) > 0
	switch {
	case sentinel && cluster:
		return fmt.Errorf("--%s and --%s exclude each other: Redis runs either under Sentinels or as a Cluster", flagSentinelAddrs, flagClusterAddrs)
	case o.Addr != "" && sentinel:
		return fmt.Errorf("--%s names a single server; with --%s the Sentinels name the master", flagAddr, flagSentinelAddrs)
	case o.Addr != "" && cluster:
		return fmt.Errorf("--%s names a single server; give a Cluster's nodes with --%s only", flagAddr, flagClusterAddrs)
	case sentinel && o.MasterName == "":
		return fmt.Errorf("--%s needs --%s, the master the Sentinels watch", flagSentinelAddrs, flagMasterName)
	case o.SentinelPasswordFile != "" && !sentinel:
		return fmt.Errorf("--%s needs --%s, the Sentinels that ask for it", flagSentinelPass, flagSentinelAddrs)
	case o.MasterName != "" && !sentinel:
		return fmt.Errorf("--%s needs --%s, the Sentinels to ask for it", flagMasterName, flagSentinelAddrs)
	case cluster && o.DB != 0:
		return fmt.Errorf("a Redis Cluster has database 0 only: drop --%s", flagDB)
	case o.DB < 0:
		return fmt.Errorf("--%s must not be negative", flagDB)
	}
	return o.validateAck()
}

// validateAck checks the replica acknowledgement flags.
func (o Options) validateAck() error {
	_, err := parseMinReplicas(o.MinReplicasAck)
	switch {
	case err != nil:
		return err
	case o.ReplicaAckTimeout < 0 || o.ReplicaAckTimeout > MaxReplicaAckTimeout:
		return fmt.Errorf("--%s must be between 0 and %s", flagReplicaAckTimeout, MaxReplicaAckTimeout)
	}
	return nil
}

// String names the Redis o reaches, for logs and errors; it never holds the password.
func (o Options) String() string {
	switch {
	case len(o.SentinelAddrs) > 0:
		return fmt.Sprintf("master %s via sentinels %s (db %d)", o.MasterName, strings.Join(o.SentinelAddrs, ","), o.DB)
	case len(o.ClusterAddrs) > 0:
		return "cluster via " + strings.Join(o.ClusterAddrs, ",")
	}
	return fmt.Sprintf("%s (db %d)", o.addr(), o.DB)
}

func (o Options) addr() string {
	if o.Addr == "" {
		return DefaultAddr
	}
	return o.Addr
}

// universal is the go-redis configuration of o: redis.NewUniversalClient makes a failover
// client when MasterName is set, a cluster client in cluster mode and a plain client
// otherwise.
func (o Options) universal(password string, ack *ackPolicy) *redis.UniversalOptions {
	u := &redis.UniversalOptions{
		DB:       o.DB,
		Password: password,
		// The failover client's connections to the Sentinels (a Sentinel's requirepass).
		SentinelPassword: o.sentinelPassword,
		PoolSize:         o.PoolSize,
		DialTimeout:      2 * time.Second,
		ReadTimeout:      2 * time.Second,
		WriteTimeout:     2 * time.Second,
	}
	if o.NoRetry {
		u.MaxRetries = -1
		u.MaxRedirects = -1 // a Cluster client resends after a network error as a redirect
	}
	switch {
	case len(o.SentinelAddrs) > 0:
		u.Addrs, u.MasterName = o.SentinelAddrs, o.MasterName
	case len(o.ClusterAddrs) > 0:
		u.Addrs, u.IsClusterMode = o.ClusterAddrs, true
	default:
		u.Addrs = []string{o.addr()}
	}
	if ack != nil && len(o.ClusterAddrs) == 0 {
		u.OnConnect = ack.onConnect // a Cluster's nodes are followed each (clusterAck.nodeClient)
	}
	return u
}

// Connect opens a client of the kind o describes (a single server, a Sentinel-managed master
// or a Cluster) and checks it answers, so that a misconfigured address fails at start-up
// rather than on the first signal.
func Connect(ctx context.Context, o Options) (redis.UniversalClient, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	password, err := readPassword(o.PasswordFile)
	if err != nil {
		return nil, err
	}
	if o.sentinelPassword, err = readPassword(o.SentinelPasswordFile); err != nil {
		return nil, err
	}
	ack := o.newAckPolicy()
	var c redis.UniversalClient
	if len(o.ClusterAddrs) > 0 {
		ca := newClusterAck(ack)
		copt := o.universal(password, ack).Cluster()
		copt.NewClient = ca.nodeClient
		cc := redis.NewClusterClient(copt)
		clusterAcks.Store(cc, ca)
		c = cc
	} else {
		c = redis.NewUniversalClient(o.universal(password, ack))
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis %s: %w", o, err)
	}
	if rc, ok := c.(*redis.Client); ok {
		policies.Store(rc, ack)
		rc.AddHook(masterGuard{})
	}
	return c, nil
}

func readPassword(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read redis password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
