package isolate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// IdentityBase is the first host uid and gid of the sandbox's own identity
// when act runs as root: uid and gid 0 … 65535 inside the sandbox are host
// IdentityBase … IdentityBase+65535 (systemd's range for such "foreign"
// ids, 0x7FFE0000 …, which no account uses). The command is then root only
// over what is mapped: the scopes and their layers, seen through idmapped
// mounts that show a host file of uid k as uid k, and the sandbox's own
// mounts. Everywhere else it is as any other user, so root-only files
// (shadow files, private keys, other users' 0600 files) are unreadable by
// kernel permission (docs/sandbox.md, "Identity").
const IdentityBase = 0x7FFE0000

// identityCount is how many ids the sandbox's identity maps (nsexec.h's
// IDMAP_COUNT).
const identityCount = 65536

// markerIdmap, in the first process's environment, is IdentityBase: act
// runs as root and the sandbox gets its own identity.
const markerIdmap = "_ACT_SANDBOX_IDMAP"

// ownIdentity says whether sandboxes get an identity of their own: act
// runs as root. An ordinary user's sandbox maps that user alone, and is
// that user for the kernel.
func ownIdentity() bool { return os.Geteuid() == 0 }

// layerRoot is the directory whose mount holds the scope's layer: its
// upper dir with a disk cap (the work dir is on the tmpfs), else the
// nearest directory above both its upper and its work dir (overlayfs wants
// them on one mount).
func layerRoot(s Scope, disk bool) string {
	if disk || s.Work == "" {
		return s.Upper
	}
	root := s.Upper
	for root != "/" && s.Work != root && !strings.HasPrefix(s.Work, root+"/") {
		root = filepath.Dir(root)
	}
	return root
}

// identityMounts makes the mounts init attaches as root (nsexec_mounts.c's
// stage_mounts): for each scope, its real directory and its layer's root,
// idmapped by the user namespace of init (pid); then a plain clone of each
// bind. init, being the sandbox's identity, could reach none of them by
// name. The caller closes the files.
func identityMounts(pid int, spec Spec) (_ []*os.File, err error) {
	ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open the sandbox's user namespace: %w", err)
	}
	defer unix.Close(ns)
	var out []*os.File
	defer func() {
		if err != nil {
			for _, f := range out {
				f.Close()
			}
		}
	}()
	var keep func(fd int, path string, idmapped bool) error
	clone := func(path string, idmapped bool) error {
		fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return &SetupError{Msg: fmt.Sprintf("clone the mount of %s: %v", path, err)}
		}
		return keep(fd, path, idmapped)
	}
	// A cache's lower is reached with no symbolic link followed anywhere
	// on its path (Cache.Dir).
	cloneNoFollow := func(path string) error {
		dir, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		if err != nil {
			return &SetupError{Msg: fmt.Sprintf("open the cache %s (no symbolic link followed): %v", path, err)}
		}
		fd, err := unix.OpenTree(dir, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		unix.Close(dir)
		if err != nil {
			return &SetupError{Msg: fmt.Sprintf("clone the mount of %s: %v", path, err)}
		}
		return keep(fd, path, true)
	}
	keep = func(fd int, path string, idmapped bool) error {
		f := os.NewFile(uintptr(fd), path)
		out = append(out, f)
		if !idmapped {
			return nil
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns)}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("%w: as root, commands run as an identity of their own, which needs idmapped mounts (Linux 5.12, and a filesystem that has them: ext4, xfs, btrfs, tmpfs …): %s: %v", ErrUnavailable, path, err)
			}
			return &SetupError{Msg: fmt.Sprintf("idmap the mount of %s: %v", path, err)}
		}
		return nil
	}
	disk := spec.Limits.DiskMB > 0
	for _, s := range spec.Scopes {
		if err := clone(s.Path, true); err != nil {
			return nil, err
		}
		if err := clone(layerRoot(s, disk), true); err != nil {
			return nil, err
		}
	}
	for _, b := range spec.Binds {
		if err := clone(b, false); err != nil {
			return nil, err
		}
	}
	for _, c := range spec.Caches {
		for _, d := range []string{c.Dir, c.Own, c.Out} {
			if d == "" {
				continue
			}
			if err := cloneNoFollow(d); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// maxRights is how many descriptors one message carries (the kernel's
// SCM_MAX_FD is 253).
const maxRights = 250

// sendRights sends files to init in messages of at most maxRights
// descriptors, the first with the record key=len(files), the others with
// "fds".
func (sb *started) sendRights(key string, files []*os.File) error {
	for i := 0; i < len(files); i += maxRights {
		chunk := files[i:min(i+maxRights, len(files))]
		rights := make([]int, len(chunk))
		for j, f := range chunk {
			rights[j] = int(f.Fd())
		}
		head := put(nil, "fds", strconv.Itoa(len(chunk)))
		if i == 0 {
			head = put(nil, key, strconv.Itoa(len(files)))
		}
		if err := sb.sendmsg(head, syscall.UnixRights(rights...)); err != nil {
			return err
		}
	}
	return nil
}

// sendmsg sends data with the control message oob on the spec socket
// (non-blocking: it waits through the poller while the socket is full);
// what a short send left of data follows without it.
func (sb *started) sendmsg(data, oob []byte) error {
	rc, err := sb.parent.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		n, serr = syscall.SendmsgN(int(fd), data, oob, nil, 0)
		return serr != syscall.EAGAIN
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if n < len(data) {
		_, err = sb.parent.Write(data[n:])
	}
	return err
}

// existing is the paths of ps that are there (the binds: one that is
// not has nothing to show).
func existing(ps []string) []string {
	var out []string
	for _, p := range ps {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// rightsReader reads the sandbox's messages from its socket, keeping the
// descriptors that come with them (msgListener's) in files.
type rightsReader struct {
	f     *os.File
	files []*os.File
}

func (r *rightsReader) Read(p []byte) (int, error) {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	oob := make([]byte, syscall.CmsgSpace(4*4))
	err = rc.Read(func(fd uintptr) bool {
		var oobn int
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, oob, syscall.MSG_CMSG_CLOEXEC)
		if rerr == syscall.EAGAIN {
			return false
		}
		if rerr == nil && oobn > 0 {
			msgs, _ := syscall.ParseSocketControlMessage(oob[:oobn])
			for _, m := range msgs {
				fds, _ := syscall.ParseUnixRights(&m)
				for _, fd := range fds {
					r.files = append(r.files, os.NewFile(uintptr(fd), "sandbox-listener"))
				}
			}
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// serveProxy serves proxy on the listener init sends, until the returned
// stop is called (the run has ended).
func serveProxy(sb *started, proxy func(context.Context, net.Listener)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case f := <-sb.listener:
			ln, err := net.FileListener(f)
			f.Close()
			if err != nil {
				return
			}
			go func() {
				<-ctx.Done()
				ln.Close()
			}()
			proxy(ctx, ln)
		case <-ctx.Done():
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
