package localstack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

// The local stack's Telegram is a stand-in for the Bot API on 127.0.0.1
// (runtime/telegram/telegramfake), run in this process: it keeps what notifyd sends and lets
// a person or a test post an update (/fake/updates/message, /fake/updates/press). Its
// address is TELEGRAM_API_URL in bin/local/env; the bot's token is a file like a Secret's
// key, made once and kept.

// startTelegram starts the stand-in with the token in bin/local/telegram-token.
func (s *Stack) startTelegram() error {
	s.telegramToken = filepath.Join(s.dir, "telegram-token")
	token, err := telegramToken(s.telegramToken)
	if err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	if s.telegram, err = telegramfake.StartAt(addr, token); err != nil {
		return err
	}
	s.printf("Telegram stand-in on %s (bot @%s)\n", s.telegram.URL, s.telegram.Username())
	return nil
}

// TelegramURL is the stand-in's address.
func (s *Stack) TelegramURL() string { return s.telegram.URL }

// Telegram is the stand-in.
func (s *Stack) Telegram() *telegramfake.Server { return s.telegram }

// telegramToken reads the token in path, or writes a new one shaped as Telegram's are
// ("<bot id>:<secret>", which goes into the Bot API's URL path).
func telegramToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	secret := make([]byte, 20)
	if _, err := rand.Read(secret); err != nil {
		return "", err
	}
	token := "1000001:" + hex.EncodeToString(secret)
	return token, os.WriteFile(path, []byte(token+"\n"), 0o600)
}
