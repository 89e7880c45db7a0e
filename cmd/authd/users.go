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

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store"
)

// users runs an account administration command.
func users(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("users needs a command: create, ensure, set-tier, set-password, credit-wallet, show")
	}
	cmd := args[0]
	fs := flag.NewFlagSet("users "+cmd, flag.ContinueOnError)
	var (
		ro                                        store.Options
		email, name, tier, wallet, amount, pwFile string
		pwStdin                                   bool
	)
	store.BindFlags(fs, &ro)
	fs.StringVar(&email, "email", "", "the account's email")
	switch cmd {
	case "create", "ensure":
		fs.StringVar(&name, "name", "", "display name (default: the email's local part)")
		fs.StringVar(&tier, "tier", "", "free, pro or team (create default: free)")
		fs.StringVar(&wallet, "wallet", "0", "starting Strategy Lab balance in USD")
	case "set-tier":
		fs.StringVar(&tier, "tier", "", "free, pro or team")
	case "credit-wallet":
		fs.StringVar(&amount, "amount", "", "USD to add")
	}
	switch cmd {
	case "create", "ensure", "set-password":
		fs.StringVar(&pwFile, "password-file", "", "read the password from this file (first line)")
		fs.BoolVar(&pwStdin, "password-stdin", false, "read the password from standard input (first line)")
	}
	// Flags and positional arguments may be mixed (set-tier E T --redis-addr A).
	var pos []string
	for rest := args[1:]; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if email == "" && len(pos) > 0 {
		email, pos = pos[0], pos[1:]
	}
	if email == "" {
		return errors.New("--email is required")
	}
	switch {
	case cmd == "set-tier" && tier == "" && len(pos) > 0:
		tier = pos[0]
	case cmd == "credit-wallet" && amount == "" && len(pos) > 0:
		amount = pos[0]
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb, err := store.Connect(ctx, ro)
	if err != nil {
		return err
	}
	defer rdb.Close()
	us := auth.NewUsers(rdb, auth.UsersOptions{})

	readPW := func(required bool) (string, error) {
		return readPassword(pwFile, pwStdin, required, stdin)
	}
	switch cmd {
	case "create":
		w, err := decimal.NewFromString(wallet)
		if err != nil {
			return fmt.Errorf("--wallet: %w", err)
		}
		pw, err := readPW(true)
		if err != nil {
			return err
		}
		u, err := us.Create(ctx, auth.NewUser{Name: name, Email: email, Password: pw, Tier: tier, Wallet: w})
		if err != nil {
			return err
		}
		return printUser(stdout, u, "created")
	case "ensure":
		w, err := decimal.NewFromString(wallet)
		if err != nil {
			return fmt.Errorf("--wallet: %w", err)
		}
		pw, err := readPW(true)
		if err != nil {
			return err
		}
		u, res, err := us.Ensure(ctx, auth.NewUser{Name: name, Email: email, Password: pw, Tier: tier, Wallet: w})
		if err != nil {
			return err
		}
		return printUser(stdout, u, string(res))
	case "set-tier":
		u, err := us.ByEmail(ctx, email)
		if err != nil {
			return fmt.Errorf("%s: %w", email, err)
		}
		ch, err := us.SetTier(ctx, u.ID, tier)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tier %s -> %s; live bots paused (Downgrade): %d; resumed: %d\n", ch.From.Slug, ch.To.Slug,
			len(ch.Paused), len(ch.Resumed))
		return nil
	case "set-password":
		u, err := us.ByEmail(ctx, email)
		if err != nil {
			return fmt.Errorf("%s: %w", email, err)
		}
		pw, err := readPW(true)
		if err != nil {
			return err
		}
		if err := us.SetPassword(ctx, u.ID, pw); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "password changed; every session, bearer JWT and OAuth authorization of the user is revoked")
		return nil
	case "credit-wallet":
		a, err := decimal.NewFromString(amount)
		if err != nil {
			return fmt.Errorf("amount: %w", err)
		}
		u, err := us.ByEmail(ctx, email)
		if err != nil {
			return fmt.Errorf("%s: %w", email, err)
		}
		bal, err := us.CreditWallet(ctx, u.ID, a)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "strategyLabBalanceUsd %s\n", bal.StringFixed(2))
		return nil
	case "show":
		u, err := us.ByEmail(ctx, email)
		if err != nil {
			return fmt.Errorf("%s: %w", email, err)
		}
		return printUser(stdout, u, "")
	}
	return fmt.Errorf("unknown users command %q", cmd)
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
