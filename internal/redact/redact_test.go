package redact

import "testing"

func TestString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"password=hunter2 next", "password=[REDACTED] next"},
		{"DB_PASSWORD: s3cr3t", "DB_PASSWORD: [REDACTED]"},
		{`{"api_key": "abc123", "name": "web"}`, `{"api_key": [REDACTED], "name": "web"}`},
		{"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "export GITHUB_TOKEN=[REDACTED]"},
		{"token ghp_abcdefghijklmnopqrstuvwxyz0123456789 used", "token [REDACTED] used"},
		{"Authorization: Bearer eyJhbGciOi.payload.sig", "Authorization: Bearer [REDACTED]"},
		{"key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED] here"},
		{"git clone https://user:pa55w0rd@example.org/r.git", "git clone https://user:[REDACTED]@example.org/r.git"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\ncut off", "[REDACTED]"},
		{"client_secret='x y'", "client_secret=[REDACTED]"},
		{"sk_live_abcdefghijklmnop1234", "[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghijk", "jwt [REDACTED]"},
		// Not secrets: ordinary words and keys.
		{"build passed: 12 tests, 0 failed", "build passed: 12 tests, 0 failed"},
		{"name=web port=8080", "name=web port=8080"},
		{"the author: Ann", "the author: Ann"},
		{"sh: /etc/passwd: Read-only file system", "sh: /etc/passwd: Read-only file system"},
		{"open /home/u/.config/secret: Permission denied", "open /home/u/.config/secret: Permission denied"},
		{"x password=a y token=b", "x password=[REDACTED] y token=[REDACTED]"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestIdempotent(t *testing.T) {
	for _, s := range []string{"password=hunter2", "Authorization: Bearer abc", "https://u:p@h/x"} {
		once := String(s)
		if twice := String(once); twice != once {
			t.Errorf("String(String(%q)) = %q, want %q", s, twice, once)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("password=hunter2")
	f.Add("Authorization: Bearer x")
	f.Fuzz(func(t *testing.T, s string) {
		once := String(s)
		if twice := String(once); twice != once {
			t.Fatalf("not idempotent: %q → %q → %q", s, once, twice)
		}
	})
}
