package credentials

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"

	"github.com/sigops/sigops/runtime/exchange"
)

// AAD is the additional data that binds sealed credentials to one ExchangeConnection (its
// Kubernetes UID): a blob copied onto another connection's projection does not open.
func AAD(connectionUID string) []byte {
	return []byte("sigops/exchange-connection/" + connectionUID)
}

// credentialsFormat is the first byte of the sealed plaintext. The layout is three
// length-prefixed fields (uvarint length, bytes): API key, API secret, passphrase. It is
// built in one buffer this package owns and clears, rather than through encoding/json,
// whose pooled buffers would keep copies of the secret after use.
const credentialsFormat = 1

// SealCredentials seals c for the connection aad names (see AAD).
func (r *Ring) SealCredentials(c exchange.Credentials, aad []byte) (string, error) {
	if len(aad) == 0 {
		return "", errors.New("seal credentials: no connection to bind them to")
	}
	buf := encodeCredentials(c)
	defer clear(buf)
	return r.Seal(buf, aad)
}

// OpenCredentials opens a blob of SealCredentials for the connection aad names.
func (r *Ring) OpenCredentials(blob string, aad []byte) (exchange.Credentials, error) {
	pt, err := r.Open(blob, aad)
	if err != nil {
		return exchange.Credentials{}, err
	}
	defer clear(pt)
	return decodeCredentials(pt)
}

// Equal compares two credentials in constant time per field.
func Equal(a, b exchange.Credentials) bool {
	eq := func(x, y string) int { return subtle.ConstantTimeCompare([]byte(x), []byte(y)) }
	return eq(a.APIKey, b.APIKey)&eq(a.APISecret, b.APISecret)&eq(a.Passphrase, b.Passphrase) == 1
}

func encodeCredentials(c exchange.Credentials) []byte {
	fields := []string{c.APIKey, c.APISecret, c.Passphrase}
	n := 1
	for _, f := range fields {
		n += binary.MaxVarintLen64 + len(f)
	}
	buf := make([]byte, 1, n)
	buf[0] = credentialsFormat
	for _, f := range fields {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	return buf
}

func decodeCredentials(b []byte) (exchange.Credentials, error) {
	if len(b) == 0 || b[0] != credentialsFormat {
		return exchange.Credentials{}, ErrMalformed
	}
	b = b[1:]
	var fields [3]string
	for i := range fields {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return exchange.Credentials{}, ErrMalformed
		}
		fields[i] = string(b[k : k+int(n)])
		b = b[k+int(n):]
	}
	if len(b) != 0 {
		return exchange.Credentials{}, ErrMalformed
	}
	return exchange.Credentials{APIKey: fields[0], APISecret: fields[1], Passphrase: fields[2]}, nil
}

// TradePermission is the name, in exchange.Permissions.List and an ExchangeConnection's
// status.permissions, of the permission trading on kind needs: "spot" or "futures".
func TradePermission(kind exchange.Kind) string {
	if kind == exchange.Futures {
		return "futures"
	}
	return "spot"
}
