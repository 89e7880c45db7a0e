package localstack

import (
	"fmt"
	"io"
	"strings"
)

// PrintReady writes the ready banner: where everything is, the replicas and how to kill one
// to watch a failover, and what to try.
func (s *Stack) PrintReady(w io.Writer) {
	kubectl := s.rel(s.kubectl) + " --kubeconfig " + s.rel(s.kubeconfig)
	var daemons []string
	for _, d := range s.Daemons() {
		daemons = append(daemons, fmt.Sprintf("%s (pid %d)", d.Name(), d.Pid()))
	}
	executor := "executor"
	if s.o.Executors > 1 {
		executor = "executor-0"
	}
	fmt.Fprintf(w, `
sigops local stack ready

  kubeconfig   %s
  redis        %s
  daemons      %s
  replicas     executor %d, webhookd %d, mcpd %d (make run ARGS='-executors=3 -webhookd=2 -mcpd=2')
  environment  %s (KUBECONFIG, REDIS_ADDR, BASE_URL, MCP_URL, CURL_CA_BUNDLE, SIGOPS_EMAIL, SIGOPS_PASSWORD, TELEGRAM_API_URL)

Every daemon, Redis and nginx is restarted with backoff when it exits. To watch a failover,
kill a replica and see it come back (make status lists each one's PID, restarts and health):
  kill -9 $(awk '$1 == "%s" {print $2}' %s)
  make status

Try:
  export $(cat %s)
  %s get signalbots,paperaccounts,exchangeconnections -A
  %s get secret %s -n %s -o jsonpath='{.data.url}' | base64 -d

Send a signal to the sample bot %s/%s (paper trading on a simulated market):
  curl --cacert %s -H 'Content-Type: application/json' \
    -d '{"action":"buy","symbol":"BTCUSDT","size":"10%%"}' \
    %s

Backtest a strategy on the local candle fixture (100,000 one-minute BTC/USDT candles):
  go run ./cmd/backtest run --candles %s --family emaCrossover --fast 12 --slow 26

Dashboard: open %s/dashboard in a browser (trust the self-signed certificate) and log
in as %s with password %s (also in %s as SIGOPS_EMAIL and SIGOPS_PASSWORD).
The sample bot's fills appear on the open Overview page as they happen. Or get a bearer token:
  curl -H 'Content-Type: application/json' -d '{"email":"'$SIGOPS_EMAIL'","password":"'$SIGOPS_PASSWORD'"}' $BASE_URL/api/auth/login

Telegram alerts (a local Bot API stand-in at TELEGRAM_API_URL): get a link code, press
Start in the stand-in's chat, and see what the bot sent:
  TOKEN=$(curl -s --cacert %s -H 'Content-Type: application/json' -d '{"email":"'$SIGOPS_EMAIL'","password":"'$SIGOPS_PASSWORD'"}' $BASE_URL/api/auth/login | grep -o '"token":"[^"]*"' | cut -d'"' -f4)
  CODE=$(curl -s --cacert %s -X POST -H "Authorization: Bearer $TOKEN" $BASE_URL/api/user/notifications/telegram/link | grep -o '"code":"[^"]*"' | cut -d'"' -f4)
  curl -s -d '{"chat":1001,"text":"/start '$CODE'"}' $TELEGRAM_API_URL/fake/updates/message
  curl -s --cacert %s -H "Authorization: Bearer $TOKEN" $BASE_URL/api/user/me | grep -o '"telegramLinked":[a-z]*'
  curl -s $TELEGRAM_API_URL/fake/messages

MCP server (MCP_URL): point an MCP client at %s/mcp (streamable HTTP); it finds the
authorization server through the 401 challenge and signs in by OAuth in the browser, or
send that bearer token as "Authorization: Bearer <token>". The certificate is self-signed:
trust %s (Node clients: NODE_EXTRA_CA_CERTS=%s).

Logs: %s, one per daemon replica (%s/<name>.log), %s.
Ctrl-C stops the stack.
`, s.rel(s.kubeconfig), s.redisShown(), strings.Join(daemons, ", "),
		s.o.Executors, s.o.Webhookd, s.o.MCPD, s.rel(s.env),
		executor, s.rel(s.pids),
		s.rel(s.env), kubectl, kubectl, s.Secret, SampleNamespace,
		SampleNamespace, SampleBot, s.rel(s.certFile), s.WebhookURL,
		s.rel(s.candles), s.baseURL(), DemoEmail, s.Password, s.rel(s.env),
		s.rel(s.certFile), s.rel(s.certFile), s.rel(s.certFile),
		s.mcpURL(), s.rel(s.certFile), s.certFile,
		s.rel(s.managerLog), s.rel(s.dir), s.rel(s.kcmLog))
}
