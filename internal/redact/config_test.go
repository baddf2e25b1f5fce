package redact

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// counter makes placeholders P1, P2, … for tests.
func counter() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%sP%d", PlaceholderPrefix, n)
	}
}

func TestConfig(t *testing.T) {
	p := func(n int) string { return fmt.Sprintf("%sP%d", PlaceholderPrefix, n) }
	tests := []struct {
		name    string
		format  ConfigFormat
		in      string
		want    string
		secrets []Secret
	}{
		{
			name:   "npmrc",
			format: Npmrc,
			in: "save-exact=true\n" +
				"//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n" +
				"@corp:registry=https://npm.corp.example/\n" +
				"//npm.corp.example/:_auth = \"dXNlcjpwYXNz\"\n" +
				"//npm.corp.example/:username=bob\n" +
				"//npm.corp.example/:_password=c2VrcmV0\n" +
				"//ci.example/:_authToken=${NPM_TOKEN}\n" +
				"; a comment with a token: ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n" +
				"always-auth=true\n",
			want: "save-exact=true\n" +
				"//registry.npmjs.org/:_authToken=" + p(1) + "\n" +
				"@corp:registry=https://npm.corp.example/\n" +
				"//npm.corp.example/:_auth = \"" + p(2) + "\"\n" +
				"//npm.corp.example/:username=bob\n" +
				"//npm.corp.example/:_password=" + b64(p(3)) + "\n" +
				"//ci.example/:_authToken=${NPM_TOKEN}\n" +
				"; a comment with a token: [REDACTED]\n" +
				"always-auth=true\n",
			secrets: []Secret{
				{p(1), "npm_abcdefghijklmnopqrstuvwxyz0123456789", "registry.npmjs.org", "//registry.npmjs.org/:_authToken"},
				{p(2), "dXNlcjpwYXNz", "npm.corp.example", "//npm.corp.example/:_auth"},
				{p(3), "sekret", "npm.corp.example", "//npm.corp.example/:_password"},
			},
		},
		{
			name:   "npmrc unscoped token goes to the registry the file names",
			format: Npmrc,
			in:     "registry=https://mirror.example/npm/\n_authToken=abc123\n",
			want:   "registry=https://mirror.example/npm/\n_authToken=" + p(1) + "\n",
			secrets: []Secret{
				{p(1), "abc123", "mirror.example", "_authToken"},
			},
		},
		{
			name:   "pip.conf",
			format: INI,
			in: "[global]\n" +
				"index-url = https://__token__:s3cr%40t@pypi.corp.example/simple\n" +
				"extra-index-url =\n" +
				"    https://TOKENONLY@pkgs.example/simple/\n" +
				"    https://pypi.org/simple\n" +
				"timeout = 60\n",
			want: "[global]\n" +
				"index-url = https://__token__:" + p(1) + "@pypi.corp.example/simple\n" +
				"extra-index-url =\n" +
				"    https://" + p(2) + "@pkgs.example/simple/\n" +
				"    https://pypi.org/simple\n" +
				"timeout = 60\n",
			secrets: []Secret{
				{p(1), "s3cr@t", "pypi.corp.example", "url userinfo"},
				{p(2), "TOKENONLY", "pkgs.example", "url userinfo"},
			},
		},
		{
			name:   "pypirc",
			format: INI,
			in: "[distutils]\nindex-servers = pypi private\n\n[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc\n\n" +
				"[private]\nrepository = https://upload.corp.example/\nusername: alice\npassword: hunter2\n",
			want: "[distutils]\nindex-servers = pypi private\n\n[pypi]\nusername = __token__\npassword = " + p(1) + "\n\n" +
				"[private]\nrepository = https://upload.corp.example/\nusername: alice\npassword: " + p(2) + "\n",
			secrets: []Secret{
				{p(1), "pypi-AgEIcHlwaS5vcmc", "upload.pypi.org", "password"},
				{p(2), "hunter2", "upload.corp.example", "password"},
			},
		},
		{
			name:   "netrc",
			format: Netrc,
			in:     "machine api.github.com\n  login bob\n  password ghp_secret1\nmachine Other.Example login x password p2 account a3\ndefault login anon password guest\n",
			want:   "machine api.github.com\n  login bob\n  password " + p(1) + "\nmachine Other.Example login x password " + p(2) + " account " + p(3) + "\ndefault login anon password " + p(4) + "\n",
			secrets: []Secret{
				{p(1), "ghp_secret1", "api.github.com", "password"},
				{p(2), "p2", "other.example", "password"},
				{p(3), "a3", "other.example", "password"},
				{p(4), "guest", "", "password"},
			},
		},
		{
			name:   "cargo config.toml",
			format: TOML,
			in: "[build]\njobs = 4\n\n[registry]\ntoken = \"cio_abc\"\n\n[registries.corp]\ntoken = \"corp_tok\"\nindex = \"sparse+https://cargo.corp.example/index/\"\n" +
				"[registries]\nother = { index = \"https://git.other.example/index\", token = 'o_tok' }\n",
			want: "[build]\njobs = 4\n\n[registry]\ntoken = \"" + p(1) + "\"\n\n[registries.corp]\ntoken = \"" + p(2) + "\"\nindex = \"sparse+https://cargo.corp.example/index/\"\n" +
				"[registries]\nother = { index = \"https://git.other.example/index\", token = '" + p(3) + "' }\n",
			secrets: []Secret{
				{p(1), "cio_abc", "crates.io", "token"},
				{p(2), "corp_tok", "cargo.corp.example", "token"},
				{p(3), "o_tok", "git.other.example", "token"},
			},
		},
		{
			name:   "gitconfig",
			format: Gitconfig,
			in: "[user]\n\tname = Bob\n\temail = bob@example.org\n" +
				"[url \"https://bob:ghp_tok@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
				"[http \"https://git.corp.example/\"]\n\textraHeader = Authorization: Bearer corp-tok\n" +
				"[http]\n\textraheader = \"PRIVATE-TOKEN: gl-tok\"\n" +
				"[core]\n\teditor = vim\n",
			want: "[user]\n\tname = Bob\n\temail = bob@example.org\n" +
				"[url \"https://bob:" + p(1) + "@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
				"[http \"https://git.corp.example/\"]\n\textraHeader = Authorization: Bearer " + p(2) + "\n" +
				"[http]\n\textraheader = \"PRIVATE-TOKEN: " + p(3) + "\"\n" +
				"[core]\n\teditor = vim\n",
			secrets: []Secret{
				{p(1), "ghp_tok", "github.com", "url userinfo"},
				{p(2), "corp-tok", "git.corp.example", "extraheader"},
				{p(3), "gl-tok", "", "extraheader"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, secrets, ok := Config(tt.format, []byte(tt.in), counter())
			if !ok {
				t.Fatal("not read")
			}
			if d := cmp.Diff(tt.want, string(out)); d != "" {
				t.Errorf("copy (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.secrets, secrets); d != "" {
				t.Errorf("secrets (-want +got):\n%s", d)
			}
			for _, s := range tt.secrets {
				if strings.Contains(string(out), s.Value) {
					t.Errorf("the copy still holds %q", s.Value)
				}
			}
			// A copy holds no secret: redacting it again changes nothing.
			again, more, _ := Config(tt.format, out, counter())
			if string(again) != string(out) || len(more) != 0 {
				t.Errorf("a copy redacted again changed (%d secrets):\n%s", len(more), again)
			}
		})
	}
}

// TestConfigUnreadable: what is not text is not shown at all.
func TestConfigUnreadable(t *testing.T) {
	for name, data := range map[string][]byte{
		"NUL":          []byte("a=b\x00c\n"),
		"invalid utf8": []byte("a=\xff\xfe\n"),
		"too large":    []byte(strings.Repeat("a=b\n", MaxConfig/4+1)),
	} {
		if _, _, ok := Config(Npmrc, data, nil); ok {
			t.Errorf("%s: read", name)
		}
		if !HoldsSecret(Npmrc, data) {
			t.Errorf("%s: HoldsSecret false for what cannot be read", name)
		}
	}
	// A private key, whatever the file says it is, is masked as a block.
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\nAAAA==\n-----END OPENSSH PRIVATE KEY-----\n"
	for _, f := range []ConfigFormat{Npmrc, INI, Netrc, TOML, Gitconfig} {
		out, _, ok := Config(f, []byte(key), nil)
		if !ok || strings.Contains(string(out), "b3BlbnNzaC1rZXk") || strings.Contains(string(out), "AAAA==") {
			t.Errorf("%s: a private key block came through: %q", f, out)
		}
	}
	if HoldsSecret(Gitconfig, []byte("[user]\n\tname = Bob\n")) {
		t.Error("a gitconfig without a secret holds one")
	}
}

// TestStringKeepsPlaceholders: redaction leaves a placeholder alone, so
// that the copy a tool reads keeps it.
func TestStringKeepsPlaceholders(t *testing.T) {
	p := NewPlaceholder()
	for _, s := range []string{
		"//registry.npmjs.org/:_authToken=" + p,
		"password = " + p,
		"https://user:" + p + "@host.example/",
		"Authorization: Bearer " + p,
		"_password=" + b64(p),
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
