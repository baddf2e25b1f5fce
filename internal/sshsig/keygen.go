package sshsig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// SignWithKeygen signs message in namespace by running
//
//	ssh-keygen -Y sign -n NAMESPACE -f KEYPATH
//
// with message on its standard input, and returns the armored signature it
// writes to its standard output. keyPath may be a private key, or a public
// key whose private half is in the person's ssh-agent; ssh-keygen asks for a
// passphrase on the terminal and, for a security key, asks for the touch
// ("Confirm user presence for key ...") on its standard error. Those
// messages go to stderr when it is not nil, and are part of the error when
// ssh-keygen fails. ctx ends ssh-keygen when it is done.
func SignWithKeygen(ctx context.Context, keyPath string, message []byte, namespace string, stderr io.Writer) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	if keyPath == "" || strings.HasPrefix(keyPath, "-") {
		return nil, fmt.Errorf("sshsig: bad key path %q", keyPath)
	}
	path, err := exec.LookPath("ssh-keygen")
	if err != nil {
		return nil, fmt.Errorf("sshsig: %w", err)
	}
	var out, errBuf bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-Y", "sign", "-n", namespace, "-f", keyPath)
	cmd.Stdin = bytes.NewReader(message)
	cmd.Stdout = &out
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(&errBuf, stderr)
	} else {
		cmd.Stderr = &errBuf
	}
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errBuf.String()); msg != "" {
			return nil, fmt.Errorf("sshsig: ssh-keygen -Y sign: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("sshsig: ssh-keygen -Y sign: %w", err)
	}
	env, err := parse(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("sshsig: ssh-keygen -Y sign wrote no signature: %w", err)
	}
	if env.Namespace != namespace {
		return nil, fmt.Errorf("sshsig: ssh-keygen signed in namespace %q, want %q", env.Namespace, namespace)
	}
	return out.Bytes(), nil
}
