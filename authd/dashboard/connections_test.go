package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

// addConnection posts the add form and returns the new connection's ID (from the redirect).
func (b *browser) addConnection(name, exchange, key, secret string) string {
	b.f.t.Helper()
	resp, body := b.submit("/dashboard/connections", url.Values{"name": {name}, "exchange": {exchange}, "api_key": {key}, "api_secret": {secret}})
	if resp.StatusCode != http.StatusSeeOther {
		b.f.t.Fatalf("add connection: status %d\n%s", resp.StatusCode, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Path != "/dashboard/connections" || loc.Query().Get("done") != "connection-added" || loc.Query().Get("added") == "" {
		b.f.t.Fatalf("add connection redirects to %q", resp.Header.Get("Location"))
	}
	return loc.Query().Get("added")
}

// statusCard waits until connection id's status fragment satisfies ok and returns it.
func (b *browser) statusCard(id, what string, ok func(string) bool) string {
	b.f.t.Helper()
	var card string
	testkit.Eventually(b.f.t, 20*time.Second, what, func() error {
		resp, body := b.get("/dashboard/connections/" + id + "/status")
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		if card = body; !ok(card) {
			return fmt.Errorf("not yet:\n%s", card)
		}
		return nil
	})
	return card
}

// noSecretAnywhere fails when a credential value is in a page, authd's log or the user's
// audit journal.
func (f *fixture) noSecretAnywhere(u auth.User, pages []string, values ...string) {
	f.t.Helper()
	var journal strings.Builder
	for _, e := range f.journal(u.ID) {
		fmt.Fprintf(&journal, "%s %s %s %s\n", e.Tool, e.Arguments, e.Outcome.Code, e.Outcome.Message)
	}
	for _, v := range values {
		for i, p := range pages {
			if strings.Contains(p, v) {
				f.t.Fatalf("page %d shows a credential:\n%s", i, p)
			}
		}
		if f.logs.Contains(v) {
			f.t.Fatalf("authd's log holds a credential:\n%s", f.logs.String())
		}
		if strings.Contains(journal.String(), v) {
			f.t.Fatalf("the audit journal holds a credential:\n%s", journal.String())
		}
	}
}

func TestAddConnectionValidatesAndNeverShowsTheKey(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()
	key, secret := "hold-K3yOf"+u.ID[:8], "S3cretOf"+u.ID[:8]+"Zq"
	var pages []string

	_, page := b.get("/dashboard/connections")
	pages = append(pages, page)
	noInlineScript(t, "connections page", page)
	for _, want := range []string{`<option value="binance" selected>Binance</option>`, `<option value="bybit">Bybit</option>`,
		`<option value="okx">OKX</option>`, `name="api_secret" required maxlength="512" autocomplete="new-password"`,
		`name="passphrase" maxlength="512" autocomplete="new-password"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("form lacks %q:\n%s", want, page)
		}
	}

	// The stub exchange holds "hold-" keys' answers until released, so the connection is
	// seen before its verdict.
	id := b.addConnection("main", "binance", key, secret)
	ns := fleet.NamespaceFor(u.ID)
	var conn tradingv1.ExchangeConnection
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main"}, &conn); err != nil {
		t.Fatal(err)
	}
	if string(conn.UID) != id || conn.Spec.Owner != u.Email || conn.Spec.Exchange != tradingv1.ExchangeBinance ||
		conn.Spec.CredentialsSecretRef.Name != "main-credentials" || conn.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops {
		t.Fatalf("connection %+v labels %v", conn.Spec, conn.Labels)
	}
	var sec corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main-credentials"}, &sec); err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["apiKey"]) != key || string(sec.Data["apiSecret"]) != secret || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != conn.UID {
		t.Fatalf("secret owners %+v, %d keys", sec.OwnerReferences, len(sec.Data))
	}

	_, page = b.get("/dashboard/connections?done=connection-added&added=" + id)
	pages = append(pages, page)
	card := between(t, page, `id="connection-`+id+`"`, "</section>")
	if !strings.Contains(page, "sigops is checking the key with the exchange") ||
		!strings.Contains(card, `hx-get="/dashboard/connections/`+id+`/status" hx-trigger="every 2s" hx-swap="outerHTML"`) ||
		!strings.Contains(card, "Validating…") {
		t.Fatalf("pending connection:\n%s", card)
	}
	_, frag := b.get("/dashboard/connections/" + id + "/status")
	pages = append(pages, frag)
	if !strings.HasPrefix(frag, `<section class="card connection" id="connection-`+id+`"`) || !strings.Contains(frag, `hx-trigger="every 2s"`) {
		t.Fatalf("pending fragment:\n%s", frag)
	}

	release(key)
	frag = b.statusCard(id, "validated", func(s string) bool { return strings.Contains(s, `<span class="badge active">Ready</span>`) })
	pages = append(pages, frag)
	// Judged: no more polling; what the exchange reported (read and spot).
	if strings.Contains(frag, "hx-trigger") || !strings.Contains(frag, "The exchange accepted the key") ||
		!strings.Contains(frag, "<dd><span>read</span>, <span>spot</span></dd>") || !strings.Contains(frag, "<dt>May trade</dt><dd>spot</dd>") ||
		strings.Contains(frag, "<dt>Last validated</dt><dd>never</dd>") {
		t.Fatalf("validated fragment:\n%s", frag)
	}
	_, page = b.get("/dashboard/connections")
	pages = append(pages, page)
	if !strings.Contains(page, `<h2 id="connection-`+id+`-name">main`) {
		t.Fatalf("list lacks the connection:\n%s", page)
	}
	if e := f.toolJournal(u, "create_exchange_connection"); len(e) != 1 || !e[0].Outcome.OK || !strings.Contains(string(e[0].Arguments), `"exchange":"binance"`) {
		t.Fatalf("journal %+v", e)
	}
	f.noSecretAnywhere(u, pages, key, secret)
}

// A key that can withdraw is refused by the controller; the page says so in words, and a
// bot on it cannot trade.
func TestWithdrawalKeyIsRefusedInWords(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	key, secret := "withdraw-"+u.ID[:8], "Wsecret"+u.ID[:8]
	id := b.addConnection("can-withdraw", "bybit", key, secret)
	frag := b.statusCard(id, "refused", func(s string) bool { return strings.Contains(s, "Refused") })
	for _, want := range []string{
		html.EscapeString("This key can withdraw funds; sigops never uses such keys: make a key without withdrawal and transfer permissions."),
		"(WithdrawalPermissionEnabled)",
		`<span class="down">withdraw</span>`,
		// The exchange says the key may trade spot, but no bot may use it.
		"<dt>May trade</dt><dd>nothing while the key is not accepted</dd>",
		`<p role="status" class="connection-verdict down">`,
	} {
		if !strings.Contains(frag, want) {
			t.Fatalf("refused fragment lacks %q:\n%s", want, frag)
		}
	}
	if strings.Contains(frag, "hx-trigger") {
		t.Fatal("a refused connection keeps polling")
	}
	bot, err := f.apis.Fleet.Create(context.Background(), callerOf(u), "on-withdraw-key", tradingv1.SignalBotSpec{
		ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "can-withdraw"}, Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "bot disabled", func() error {
		got, err := f.apis.Fleet.Get(context.Background(), callerOf(u), string(bot.UID))
		if err != nil {
			return err
		}
		if got.Availability != string(tradingv1.AvailabilityDisabled) || got.DisabledCode != registry.DisabledExchangeDisconnected {
			return fmt.Errorf("availability %s code %s", got.Availability, got.DisabledCode)
		}
		return nil
	})
	_, page := b.get("/dashboard/connections")
	if card := between(t, page, `id="connection-`+id+`"`, "</section>"); !strings.Contains(card, `">on-withdraw-key</a>`) {
		t.Fatalf("card does not name its bot:\n%s", card)
	}
	f.noSecretAnywhere(u, []string{frag, page}, key, secret)
}

func TestConnectionRefusals(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	b := f.loggedIn(u)
	ctx := context.Background()
	secret := "RefusedSecret" + u.ID[:8]
	ns := fleet.NamespaceFor(u.ID)

	// Without the CSRF token: 403 and nothing made.
	resp, _ := b.post("/dashboard/connections", url.Values{"name": {"x"}, "exchange": {"binance"}, "api_key": {"k"}, "api_secret": {secret}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without CSRF: status %d, want 403", resp.StatusCode)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x"}, &tradingv1.ExchangeConnection{}); !apierrors.IsNotFound(err) {
		t.Fatalf("connection made without CSRF: %v", err)
	}
	// A free user is told bots on a connection need live trading.
	_, page := b.get("/dashboard/connections")
	if !strings.Contains(page, "does not include live trading") {
		t.Fatal("no tier notice for a free user")
	}

	var pages []string
	for _, tc := range []struct {
		name, exchange, key, want string
	}{
		{"", "binance", "k1", "give the connection a name"},
		{"ok-name", "kraken", "k1", "choose Binance, Bybit or OKX"},
		{"ok-name", "okx", "k1", "passphrase is required"},
		{"ok-name", "binance", "", "apiKey is required"},
		{xssPayloads[0], "binance", "k1", "metadata.name"},
		{xssPayloads[1], "bybit", "k1", "metadata.name"},
	} {
		resp, page := b.submit("/dashboard/connections", url.Values{"name": {tc.name}, "exchange": {tc.exchange}, "api_key": {tc.key}, "api_secret": {secret}})
		pages = append(pages, page)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, html.EscapeString(tc.want)) {
			t.Fatalf("%q: status %d\n%s", tc.name, resp.StatusCode, page)
		}
		// The form comes back with the name (escaped), never with the key.
		if !strings.Contains(page, `id="connection-name" name="name" value="`+html.EscapeString(tc.name)+`"`) ||
			!strings.Contains(page, `id="connection-key" name="api_key" required`) {
			t.Fatalf("%q: form not kept:\n%s", tc.name, page)
		}
		if tc.name != "" && strings.Contains(page, tc.name) && strings.ContainsAny(tc.name, `<>"`) {
			t.Fatalf("%q is shown unescaped", tc.name)
		}
		noInlineScript(t, "refused add", page)
	}
	f.noSecretAnywhere(u, pages, secret)
	// Refused adds leave no Secret behind.
	var secrets corev1.SecretList
	if err := k8s.List(ctx, &secrets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Fatalf("%d secrets left behind", len(secrets.Items))
	}

	// Another user's connection answers like a missing one, on every route.
	owner := f.user("pro")
	id := f.loggedIn(owner).addConnection("theirs", "binance", "plain-"+owner.ID[:8], "Psecret"+owner.ID[:8])
	for _, path := range []string{"/dashboard/connections/" + id + "/status", "/dashboard/connections/" + id + "/delete",
		"/dashboard/connections/no-such-id/status"} {
		if resp, _ := b.get(path); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s by another user: status %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := b.submit("/dashboard/connections/"+id+"/delete", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("delete by another user: status %d, want 404", resp.StatusCode)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: fleet.NamespaceFor(owner.ID), Name: "theirs"}, &tradingv1.ExchangeConnection{}); err != nil {
		t.Fatalf("another user's delete touched the connection: %v", err)
	}
	if _, page := b.get("/dashboard/connections"); strings.Contains(page, id) {
		t.Fatal("another user's connection is listed")
	}
}

func TestDeleteConnectionAsksFirstAndRefusesOneInUse(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()
	ns := fleet.NamespaceFor(u.ID)
	id := b.addConnection("spot-key", "binance", "plain-"+u.ID[:8], "Dsecret"+u.ID[:8])
	b.statusCard(id, "validated", func(s string) bool { return strings.Contains(s, "Ready") })
	bot, err := f.apis.Fleet.Create(ctx, callerOf(u), "spot-bot", tradingv1.SignalBotSpec{
		ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "spot-key"}, Symbol: "ETH/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "bot projected", func() error {
		_, err := f.apis.Fleet.Get(ctx, callerOf(u), string(bot.UID))
		return err
	})

	// The confirmation step: a GET that changes nothing, with the bots that stop it.
	resp, page := b.get("/dashboard/connections/" + id + "/delete")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<form method="post" action="/dashboard/connections/`+id+`/delete">`) ||
		!strings.Contains(page, "These bots trade on it") || !strings.Contains(page, `">spot-bot</a>`) {
		t.Fatalf("confirmation: status %d\n%s", resp.StatusCode, page)
	}
	noInlineScript(t, "confirmation", page)
	if resp, _ := b.post("/dashboard/connections/"+id+"/delete", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("delete without CSRF: status %d, want 403", resp.StatusCode)
	}
	resp, page = b.submit("/dashboard/connections/"+id+"/delete", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "is used by spot-bot") || !strings.Contains(page, "INVALID_ACTION") {
		t.Fatalf("delete in use: status %d\n%s", resp.StatusCode, page)
	}
	if err := f.apis.Fleet.Delete(ctx, callerOf(u), string(bot.UID)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "bot gone", func() error {
		if _, err := f.apis.Fleet.Get(ctx, callerOf(u), string(bot.UID)); err == nil {
			return fmt.Errorf("still projected")
		}
		return nil
	})
	resp, _ = b.submit("/dashboard/connections/"+id+"/delete", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/connections?done=connection-deleted" {
		t.Fatalf("delete: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	testkit.Eventually(t, 20*time.Second, "connection, secret and projection gone", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "spot-key-credentials"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret: %v", err)
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "spot-key"}, &tradingv1.ExchangeConnection{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("connection: %v", err)
		}
		if _, page := b.get("/dashboard/connections"); strings.Contains(page, id) {
			return fmt.Errorf("still listed")
		}
		return nil
	})
	var got []string
	for _, e := range f.toolJournal(u, "delete_exchange_connection") {
		got = append(got, string(e.Outcome.Code))
	}
	if strings.Join(got, ",") != ",INVALID_ACTION" {
		t.Fatalf("journal outcomes %q", got)
	}
}

// A connection applied outside sigops is listed, and deleted only in its repository.
func TestGitOpsConnectionIsNotDeletedHere(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()
	ns := fleet.NamespaceFor(u.ID)
	// The namespace as fleet makes it, then a Secret and a connection applied by hand.
	if _, err := f.apis.Fleet.Namespace(ctx, callerOf(u)); err != nil {
		t.Fatal(err)
	}
	secret := "GsecretOf" + u.ID[:8]
	if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-keys"},
		Data: map[string][]byte{"apiKey": []byte("plain-g" + u.ID[:8]), "apiSecret": []byte(secret)}}); err != nil {
		t.Fatal(err)
	}
	conn := &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: u.Email, Exchange: tradingv1.ExchangeBybit,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "team-keys"}}}
	if err := k8s.Create(ctx, conn); err != nil {
		t.Fatal(err)
	}
	id := string(conn.UID)
	b.statusCard(id, "validated", func(s string) bool { return strings.Contains(s, "Ready") })

	resp, page := b.get("/dashboard/connections/" + id + "/delete")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "applied by your platform team") || strings.Contains(page, `action="/dashboard/connections/`+id+`/delete"`) {
		t.Fatalf("confirmation of a GitOps connection: status %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.submit("/dashboard/connections/"+id+"/delete", nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "delete it in its repository (MANAGED_BY_GITOPS)") {
		t.Fatalf("delete of a GitOps connection: status %d\n%s", resp.StatusCode, page)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team"}, &tradingv1.ExchangeConnection{}); err != nil {
		t.Fatal(err)
	}
	f.noSecretAnywhere(u, []string{page}, secret)
}
