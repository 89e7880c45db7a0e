package browser_test

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which hack/install-deps.sh installs. Without it the
// browser tests fail rather than skip, so that a machine without it cannot pass them.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: run hack/install-deps.sh (it installs Debian's chromium), then run the tests again")
	return ""
}

// tab is one Chromium tab on the stack's origin, and what its pages wrote to the console.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	// problems are uncaught exceptions and CSP refusals, which fail the test at its end.
	problems []string
}

// newTab starts a headless Chromium of its own (a fresh profile in a temporary directory)
// with one tab, viewport 1280x800, light colour scheme and window.confirm answering yes.
func newTab(t *testing.T) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		// The tests run as root, where Chromium's sandbox cannot start.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		// No traffic of Chromium's own: the machine has no outside network, and the
		// retries of a blocked update or sync check would compete with the stack.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-domain-reliability", true),
		// The stack's loopback certificate is trusted by its public key's pin, and no other.
		chromedp.Flag("ignore-certificate-errors-spki-list", spkiPin(t)),
		chromedp.WindowSize(1280, 800),
	)
	if os.Getenv("SIGOPS_BROWSER_LOG") != "" {
		opts = append(opts, chromedp.CombinedOutput(os.Stderr))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	tb := &tab{t: t, ctx: ctx}
	// The browser starts with the tab's own context (a timed child's end would stop it),
	// and the console is watched before the first page.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				tb.mu.Lock()
				tb.problems = append(tb.problems, fmt.Sprintf("%s (%s:%d:%d)", m, m.URL, m.Line+1, m.Column+1))
				tb.mu.Unlock()
			}
		}
	}()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: "window.confirm = function () { return true; };"}); err != nil {
		t.Fatal(err)
	}
	tb.scheme("light")
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.problems) > 0 {
			t.Errorf("the pages reported problems:\n%s", strings.Join(tb.problems, "\n"))
		}
	})
	return tb
}

// spkiPin is the base64 SHA-256 of the stack certificate's public key, the form Chromium's
// --ignore-certificate-errors-spki-list takes.
func spkiPin(t *testing.T) string {
	t.Helper()
	cert := front.Certificate()
	if cert == nil {
		t.Fatal("the stack serves no certificate")
	}
	der, err := x509.MarshalPKIXPublicKey(cert.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// do runs actions, each step bounded so that a missing element fails the test in time.
func (b *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.t.Fatalf("browser at %s: %v", loc, err)
	}
}

// clickLive clicks an element inside a section the page swaps live (htmx every 10 s, or
// on a live event). chromedp's Click finds the node and then dispatches the mouse at it;
// a swap in between leaves it with a node that no longer exists. Here the lookup and the
// click are one script, waited for until the element is there.
func (b *tab) clickLive(selector string) {
	b.t.Helper()
	b.until(10*time.Second, "clicking "+selector, fmt.Sprintf(
		`(function () { var e = document.querySelector(%q); if (!e) { return false; } e.click(); return true; })()`, selector))
}

// eval evaluates a script and decodes its result.
func eval[T any](b *tab, script string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %q: %v", script, err)
	}
	return v
}

// until waits until the script's value is truthy, polled every 50 ms; a navigation in
// between (a form posted, a redirect) starts the poll again on the new page.
func (b *tab) until(within time.Duration, what, script string) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, time.Until(deadline)+5*time.Second)
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](script, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the new page's document
	}
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	b.t.Fatalf("%s: not within %s (%v) at %s; the page says:\n%s", what, within, err, loc, text)
}

// open navigates to a path of the stack and waits for its <main>.
func (b *tab) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("main")))
}

// path is the tab's location without the origin.
func (b *tab) path() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return trimBase(loc)
}

// scheme emulates the system's colour scheme (light or dark).
func (b *tab) scheme(s string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}}); err != nil {
		b.t.Fatal(err)
	}
}

// shot saves a PNG of the whole page as dir/name.png when screenshots are asked for.
func (b *tab) shot(dir, name string) {
	b.t.Helper()
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

var errNotYet = errors.New("not yet")
