package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/act-project/act/internal/redact"
)

// secretHeaders are request headers whose value is a credential whatever
// it looks like.
var secretHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "x-auth-token": true, "private-token": true,
}

// atRest returns the canonical descriptor as a plan stores it
// (docs/state.md): secrets it carries — command environment values,
// arguments and standard input that redaction recognises, request headers
// that carry credentials, URL credentials, file contents with a recognised
// secret — are replaced by [redact.Mask]. Apply needs none of them: the
// commands ran at plan time, the new content is in the layer. It returns
// canon itself when there was nothing to redact.
func atRest(canon []byte) (stored []byte, redacted bool) {
	var v any
	if err := json.Unmarshal(canon, &v); err != nil {
		return canon, false
	}
	changed := false
	str := func(s string) string {
		r := redact.String(s)
		if r != s {
			changed = true
		}
		return r
	}
	var walk func(d map[string]any)
	walk = func(d map[string]any) {
		if op, ok := d["operation"].(map[string]any); ok {
			if env, ok := op["env"].(map[string]any); ok {
				for k, val := range env {
					if s, ok := val.(string); ok {
						if r := redact.String(k + "=" + s); r != k+"="+s || secretName(k) {
							env[k], changed = redact.Mask, true
						}
					}
				}
			}
			if headers, ok := op["headers"].(map[string]any); ok {
				for k, val := range headers {
					if s, ok := val.(string); ok {
						if secretHeaders[strings.ToLower(k)] {
							headers[k], changed = redact.Mask, true
						} else {
							headers[k] = str(s)
						}
					}
				}
			}
			if argv, ok := op["argv"].([]any); ok {
				for i, a := range argv {
					if s, ok := a.(string); ok {
						argv[i] = str(s)
					}
				}
			}
			for _, f := range []string{"url", "stdin", "content"} {
				if s, ok := op[f].(string); ok {
					op[f] = str(s)
				}
			}
		}
		if steps, ok := d["steps"].([]any); ok {
			for _, s := range steps {
				if m, ok := s.(map[string]any); ok {
					walk(m)
				}
			}
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return canon, false
	}
	walk(m)
	if !changed {
		return canon, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return canon, false
	}
	return b, true
}

// secretName reports whether an environment variable's name says its value
// is a secret.
func secretName(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "secret", "token", "api_key", "apikey", "credential", "private_key", "access_key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// StoredDigest is the sha256 of the descriptor bytes p keeps: the
// canonical descriptor's own digest unless secrets were redacted from it.
func (p *Plan) StoredDigest() string {
	if p.StoredDescriptorDigest != "" {
		return p.StoredDescriptorDigest
	}
	return p.DescriptorDigest
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
