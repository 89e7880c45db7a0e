package credentials

import (
	flagpkg "flag"
	"log/slog"
)

// KeyFlags are the master-key flags of every process that seals or opens exchange
// credentials (manager, executor, webhookd, mcpd), declared and loaded in one place so that
// they mean the same everywhere.
type KeyFlags struct {
	// Current is --master-key-file; Previous is --previous-master-key-files
	// (comma-separated).
	Current, Previous string
}

// Bind declares --master-key-file and --previous-master-key-files on fs. use ends the
// first flag's help: what the key does in this process and what happens without it.
func (k *KeyFlags) Bind(fs *flagpkg.FlagSet, use string) {
	fs.StringVar(&k.Current, "master-key-file", "", "file with the 32-byte master key (raw or base64) that "+use)
	fs.StringVar(&k.Previous, "previous-master-key-files", "", "comma-separated files with previous master keys, still accepted for opening during a rotation (until every connection is re-sealed)")
}

// Load is FromFlags of the flags. It logs the loaded key IDs (short hashes, safe to log),
// or warns with withoutKey when no master key is given.
func (k KeyFlags) Load(logger *slog.Logger, withoutKey string) (*Ring, error) {
	keys, err := FromFlags(k.Current, k.Previous)
	switch {
	case err != nil:
		return nil, err
	case keys == nil:
		logger.Warn("no --master-key-file: " + withoutKey)
	default:
		logger.Info("master keys loaded", "currentKeyId", keys.CurrentKeyID(), "keyIds", keys.KeyIDs())
	}
	return keys, nil
}
