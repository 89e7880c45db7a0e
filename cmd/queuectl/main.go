// Command queuectl lets an operator look after the signal queue's dead letters: signals the
// executor gave up on (retry budget spent, a panic, an undecodable entry). It also carries
// the Redis data of an installation without hash-tagged keys over to the current key names
// (runtime/store/keymigration), once, during the upgrade.
//
//	queuectl [redis flags] dead list [-after ID] [-n 50] [-json]
//	queuectl [redis flags] dead show ID
//	queuectl [redis flags] dead retry [-fresh] ID
//	queuectl [redis flags] dead drop ID
//	queuectl [redis flags] migrate-keys [-dry-run]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/keymigration"
)

const usage = `usage: queuectl [flags] dead list [-after ID] [-n 50] [-json]
       queuectl [flags] dead show ID
       queuectl [flags] dead retry [-fresh] ID
       queuectl [flags] dead drop ID
       queuectl [flags] migrate-keys [-dry-run]
`

func main() {
	var ro store.Options
	store.BindFlags(flag.CommandLine, &ro)
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage); flag.PrintDefaults() }
	flag.Parse()
	args := flag.Args()
	run, timeout := dead, 30*time.Second
	switch {
	case len(args) >= 2 && args[0] == "dead":
		args = args[1:]
	case len(args) >= 1 && args[0] == "migrate-keys":
		// A large installation has millions of keys to scan and rename.
		run, timeout = migrateKeys, time.Hour
	default:
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rdb, err := store.Connect(ctx, ro)
	if err == nil {
		defer rdb.Close()
		err = run(ctx, rdb, os.Stdout, args[0], args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "queuectl:", err)
		os.Exit(1)
	}
}

func dead(ctx context.Context, rdb redis.UniversalClient, out io.Writer, cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	after := fs.String("after", "", "list: start after this dead-letter ID")
	n := fs.Int64("n", 50, "list: how many")
	asJSON := fs.Bool("json", false, "list: one JSON object per line")
	fresh := fs.Bool("fresh", false, "retry: re-stamp the receive time with now, so maxSignalAge counts from the retry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	id := fs.Arg(0)
	if cmd != "list" && id == "" {
		return errors.New("name a dead letter: " + cmd + " ID")
	}
	switch cmd {
	case "list":
		dls, err := queue.ListDeadLetters(ctx, rdb, *after, *n)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(out)
			for _, dl := range dls {
				if err := enc.Encode(dl); err != nil {
					return err
				}
			}
			return nil
		}
		return table(out, dls)
	case "show":
		dl, err := queue.GetDeadLetter(ctx, rdb, id)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(dl)
	case "retry":
		env, err := queue.RetryDeadLetter(ctx, rdb, id, *fresh)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "queued signal %s of bot %s again\n", env.SignalID, env.BotID)
		return err
	case "drop":
		if err := queue.DropDeadLetter(ctx, rdb, id); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "dropped %s\n", id)
		return err
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

// migrateKeys runs the key migration and prints what it did.
func migrateKeys(ctx context.Context, rdb redis.UniversalClient, out io.Writer, cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	dry := fs.Bool("dry-run", false, "report what would move, change nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	report, err := keymigration.Run(ctx, rdb, *dry)
	if errors.Is(err, keymigration.ErrCluster) {
		// A Cluster holds the tagged names already; only the wallets' move, the paper
		// orders' drain and the order records' names apply.
		var f keymigration.Family
		f, err = keymigration.Wallets(ctx, rdb, *dry)
		report = keymigration.Report{f}
		if err == nil {
			f, err = keymigration.PaperOrders(ctx, rdb, *dry)
			report = append(report, f)
		}
		if err == nil {
			f, err = keymigration.BookOrderNames(ctx, rdb, *dry)
			report = append(report, f)
		}
	}
	if *dry {
		fmt.Fprintln(out, "dry run: nothing was changed")
	}
	fmt.Fprint(out, report)
	return err
}

func table(out io.Writer, dls []queue.DeadLetter) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT (UTC)\tSIGNAL\tBOT\tREASON\tATTEMPTS\tCODE\tLAST ERROR")
	for _, dl := range dls {
		last := dl.LastError
		if len(last) > 60 {
			last = last[:60] + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", dl.ID, time.UnixMilli(dl.At).UTC().Format(time.DateTime),
			dl.SignalID, dl.BotID, dl.Reason, dl.Attempts, dl.Code, last)
	}
	return tw.Flush()
}
