package policy

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path"
	"strconv"
)

// LookupHome returns the home directory the password database gives the
// user act runs as (its real uid): never $HOME, which whoever starts act
// chooses. Only the tests' act (testdata/testcli) changes it.
var LookupHome = passwdHome

func passwdHome() (string, error) {
	uid := strconv.Itoa(os.Getuid())
	// user.LookupId, not user.Current: Current falls back to $HOME when
	// the lookup fails.
	u, err := user.LookupId(uid)
	if err != nil {
		return "", fmt.Errorf("uid %s has no home directory in the password database: %w", uid, err)
	}
	return u.HomeDir, nil
}

// RealHome returns the directory "~" stands for in every policy layer
// (system, user and the embedded default): the password database's home of
// the user act runs as ([LookupHome]), cleaned. A home that is empty,
// relative or "/" is an error: "~" never widens to the whole filesystem
// (docs/policy.md).
func RealHome() (string, error) {
	h, err := LookupHome()
	if err != nil {
		return "", err
	}
	return checkHome(h)
}

// checkHome returns h cleaned, or why "~" may not expand to it.
func checkHome(h string) (string, error) {
	switch {
	case h == "":
		return "", errors.New("the password database gives the user no home directory")
	case !path.IsAbs(h):
		return "", fmt.Errorf("the password database gives the user the relative home directory %q", h)
	}
	h = path.Clean(h)
	if h == "/" {
		return "", errors.New(`the password database gives the user the home directory "/", and "~" is never expanded to the whole filesystem`)
	}
	return h, nil
}

// home is what "~" expands to while a policy is read: dir, or, when err
// is set, nothing (a file layer using "~" is then invalid, and the
// default's "~" entries are left out).
type home struct {
	dir string
	err error
}

// homeOf is the home of an explicit directory (Parse, Default).
func homeOf(dir string) home {
	d, err := checkHome(dir)
	return home{d, err}
}

// realHome is the home of [RealHome].
func realHome() home {
	d, err := RealHome()
	return home{d, err}
}
