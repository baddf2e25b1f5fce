package descriptors

import "testing"

// A file's scope is its directory, or the file itself where the directory
// is a home or / (no scope may take one in); the directories a write
// makes are scoped from the nearest that exists, or from the outermost
// made where that is a home.
func TestFileScope(t *testing.T) {
	homes := HomeRoots("/u/me", "/var/lib/me")
	for _, tt := range []struct {
		p, scope string
		itself   bool
	}{
		{"/u/me/.bashrc", "/u/me/.bashrc", true},
		{"/var/lib/me/.profile", "/var/lib/me/.profile", true},
		{"/root/.zshrc", "/root/.zshrc", true},
		{"/home/other/.bashrc", "/home/other/.bashrc", true},
		{"/etcfile", "/etcfile", true},
		{"/u/me/src/a.go", "/u/me/src", false},
		{"/home/other/src/a.go", "/home/other/src", false},
		{"/tmp/w/a.txt", "/tmp/w", false},
	} {
		if s, itself := FileScope(tt.p, homes); s != tt.scope || itself != tt.itself {
			t.Errorf("FileScope(%s) = %s, %t; want %s, %t", tt.p, s, itself, tt.scope, tt.itself)
		}
	}
	if s := MadeDirScope([]string{"/u/me/notes", "/u/me/notes/a"}, "/u/me", homes); s != "/u/me/notes" {
		t.Errorf("MadeDirScope under a home = %s", s)
	}
	if s := MadeDirScope([]string{"/u/me/src/new"}, "/u/me/src", homes); s != "/u/me/src" {
		t.Errorf("MadeDirScope under a project = %s", s)
	}
	if s := MadeDirScope(nil, "/u/me", homes); s != "/u/me" {
		t.Errorf("MadeDirScope with nothing made = %s", s)
	}
}
