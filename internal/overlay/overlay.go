// Package overlay knows the on-disk form of an overlayfs upper directory,
// which act's layers share with the kernel: a deletion is a whiteout (a
// character device 0/0) and a directory that hides what is below it carries
// the opaque xattr, in the userxattr form overlay uses inside a user
// namespace or the trusted form of a privileged mount.
package overlay

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// The opaque directory markers.
const (
	// OpaqueXattr is the userxattr form, which act writes.
	OpaqueXattr = "user.overlay.opaque"
	// TrustedOpaqueXattr is the form of a mount without userxattr, also
	// read.
	TrustedOpaqueXattr = "trusted.overlay.opaque"
)

// IsWhiteout reports whether fi is a whiteout: a character device with
// device number 0/0.
func IsWhiteout(fi fs.FileInfo) bool {
	if fi.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// IsOpaque reports whether the directory name carries an opaque xattr set
// to "y". It does not follow a final symlink.
func IsOpaque(name string) bool {
	for _, attr := range []string{OpaqueXattr, TrustedOpaqueXattr} {
		var buf [8]byte
		n, err := unix.Lgetxattr(name, attr, buf[:])
		if err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}
