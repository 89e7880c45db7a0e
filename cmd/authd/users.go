package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/term"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/store"
)

// users runs an account administration command.
func users(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("users needs a command: create, ensure, set-tier, set-password, credit-wallet, wallet-ledger, show, suspend-apps, lift-apps")
	}
	c, err := parseUsers(args[0], args[1:])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb, err := store.Connect(ctx, c.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()
	uo := auth.UsersOptions{}
	if c.databaseURL != "" {
		// The accounts' record: applied and reached before any change.
		db, err := database.Open(ctx, c.databaseURL, 10*time.Second)
		if err != nil {
			return err
		}
		defer db.Close()
		uo.DB = db
	}
	run := usersRun{usersCommand: c, us: auth.NewUsers(rdb, uo), apps: apppolicy.New(rdb, apppolicy.Options{DB: uo.DB}),
		stdin: stdin, stdout: stdout}
	return run.run(ctx)
}

// usersCommand is one users command with its flags and positional arguments read.
type usersCommand struct {
	name                                  string
	redis                                 store.Options
	databaseURL                           string
	email, userName, tier, wallet, amount string
	passwordFile                          string
	passwordStdin                         bool
	limit                                 int
}

// parseUsers reads the flags of command name; flags and positional arguments may be mixed
// (set-tier E T --redis-addr A).
func parseUsers(name string, args []string) (usersCommand, error) {
	c := usersCommand{name: name}
	fs := c.flags()
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if c.email == "" && len(pos) > 0 {
		c.email, pos = pos[0], pos[1:]
	}
	if c.email == "" {
		return c, errors.New("--email is required")
	}
	switch {
	case name == "set-tier" && c.tier == "" && len(pos) > 0:
		c.tier = pos[0]
	case name == "credit-wallet" && c.amount == "" && len(pos) > 0:
		c.amount = pos[0]
	}
	return c, nil
}

// flags are the flags of c's command, writing into c.
func (c *usersCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("users "+c.name, flag.ContinueOnError)
	store.BindFlags(fs, &c.redis)
	fs.StringVar(&c.databaseURL, "database-url", os.Getenv(database.URLEnv),
		"PostgreSQL, the accounts' record (default $"+database.URLEnv+"; empty: Redis alone)")
	fs.StringVar(&c.email, "email", "", "the account's email")
	switch c.name {
	case "create", "ensure":
		fs.StringVar(&c.userName, "name", "", "display name (default: the email's local part)")
		fs.StringVar(&c.tier, "tier", "", "free, pro or team (create default: free)")
		fs.StringVar(&c.wallet, "wallet", "0", "starting Strategy Lab balance in USD")
	case "set-tier":
		fs.StringVar(&c.tier, "tier", "", "free, pro or team")
	case "credit-wallet":
		fs.StringVar(&c.amount, "amount", "", "USD to add")
	case "wallet-ledger":
		fs.IntVar(&c.limit, "limit", 50, "entries to print, newest first")
	}
	switch c.name {
	case "create", "ensure", "set-password":
		fs.StringVar(&c.passwordFile, "password-file", "", "read the password from this file (first line)")
		fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the password from standard input (first line)")
	}
	return fs
}

// usersRun is a users command against the accounts in Redis.
type usersRun struct {
	usersCommand
	us     *auth.Users
	apps   *apppolicy.Policies
	stdin  io.Reader
	stdout io.Writer
}

func (r usersRun) run(ctx context.Context) error {
	switch r.name {
	case "create":
		n, err := r.newUser()
		if err != nil {
			return err
		}
		u, err := r.us.Create(ctx, n)
		if err != nil {
			return err
		}
		return printUser(r.stdout, u, "created")
	case "ensure":
		n, err := r.newUser()
		if err != nil {
			return err
		}
		u, res, err := r.us.Ensure(ctx, n)
		if err != nil {
			return err
		}
		return printUser(r.stdout, u, string(res))
	case "set-tier":
		return r.setTier(ctx)
	case "set-password":
		return r.setPassword(ctx)
	case "credit-wallet":
		return r.creditWallet(ctx)
	case "wallet-ledger":
		return r.walletLedger(ctx)
	case "suspend-apps", "lift-apps":
		return r.appsSwitch(ctx)
	case "show":
		u, err := r.byEmail(ctx)
		if err != nil {
			return err
		}
		return printUser(r.stdout, u, "")
	}
	return fmt.Errorf("unknown users command %q", r.name)
}

// newUser is the account that create and ensure write: the flags, and a password that is
// required.
func (r usersRun) newUser() (auth.NewUser, error) {
	w, err := decimal.NewFromString(r.wallet)
	if err != nil {
		return auth.NewUser{}, fmt.Errorf("--wallet: %w", err)
	}
	pw, err := readPassword(r.passwordFile, r.passwordStdin, true, r.stdin)
	if err != nil {
		return auth.NewUser{}, err
	}
	return auth.NewUser{Name: r.userName, Email: r.email, Password: pw, Tier: r.tier, Wallet: w}, nil
}

func (r usersRun) byEmail(ctx context.Context) (auth.User, error) {
	u, err := r.us.ByEmail(ctx, r.email)
	if err != nil {
		return auth.User{}, fmt.Errorf("%s: %w", r.email, err)
	}
	return u, nil
}

// appsSwitch turns the account's kill switch on (suspend-apps) or off (lift-apps): the
// operator's way to stop every app a user connected, as the user's own button does.
func (r usersRun) appsSwitch(ctx context.Context) error {
	u, err := r.byEmail(ctx)
	if err != nil {
		return err
	}
	if r.name == "lift-apps" {
		if err := r.apps.Lift(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(r.stdout, "%s: connected apps may trade again\n", u.Email)
		return nil
	}
	since, err := r.apps.Suspend(ctx, u.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "%s: every connected app's trading suspended since %s (reads still work)\n", u.Email, since.Format(time.RFC3339))
	return nil
}

func (r usersRun) setTier(ctx context.Context) error {
	u, err := r.byEmail(ctx)
	if err != nil {
		return err
	}
	ch, err := r.us.SetTier(ctx, u.ID, r.tier)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "tier %s -> %s; live bots paused (Downgrade): %d; resumed: %d\n", ch.From.Slug, ch.To.Slug,
		len(ch.Paused), len(ch.Resumed))
	return nil
}

func (r usersRun) setPassword(ctx context.Context) error {
	u, err := r.byEmail(ctx)
	if err != nil {
		return err
	}
	pw, err := readPassword(r.passwordFile, r.passwordStdin, true, r.stdin)
	if err != nil {
		return err
	}
	if err := r.us.SetPassword(ctx, u.ID, pw); err != nil {
		return err
	}
	fmt.Fprintln(r.stdout, "password changed; every session, bearer JWT and OAuth authorization of the user is revoked")
	return nil
}

func (r usersRun) creditWallet(ctx context.Context) error {
	a, err := decimal.NewFromString(r.amount)
	if err != nil {
		return fmt.Errorf("amount: %w", err)
	}
	u, err := r.byEmail(ctx)
	if err != nil {
		return err
	}
	bal, err := r.us.Wallets.Credit(ctx, u.ID, a)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "strategyLabBalanceUsd %s\n", bal.StringFixed(2))
	return nil
}

// walletLedger prints the newest entries of the account's wallet ledger (top-ups, debits,
// refunds, each with the balance after it), one JSON object a line.
func (r usersRun) walletLedger(ctx context.Context) error {
	u, err := r.byEmail(ctx)
	if err != nil {
		return err
	}
	entries, _, err := r.us.Wallets.Ledger(ctx, u.ID, "", max(r.limit, 1))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(r.stdout)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

func printUser(w io.Writer, u auth.User, result string) error {
	out := map[string]any{"id": u.ID, "name": u.Name, "email": u.Email, "tier": u.Tier.Slug,
		"strategyLabBalanceUsd": u.StrategyLabBalanceUsd.StringFixed(2), "telegramLinked": u.TelegramLinked}
	if result != "" {
		out["result"] = result
	}
	enc := json.NewEncoder(w)
	return enc.Encode(out)
}

// readPassword reads a password from a file, from standard input, or from the terminal
// without echo. It is never printed.
func readPassword(file string, fromStdin, required bool, stdin io.Reader) (string, error) {
	var pw string
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read password file: %w", err)
		}
		pw, _, _ = strings.Cut(string(b), "\n")
	case !fromStdin && stdin == os.Stdin && term.IsTerminal(int(os.Stdin.Fd())):
		fmt.Fprint(os.Stderr, "Password: ")
		b, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(os.Stderr, "Again: ")
		b2, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return "", err
		}
		if string(b) != string(b2) {
			return "", errors.New("the passwords differ")
		}
		pw = string(b)
	default:
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		pw = line
	}
	pw = strings.TrimRight(pw, "\r\n")
	if pw == "" && required {
		return "", errors.New("empty password")
	}
	return pw, nil
}
