package isolate

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A Warm is a sandbox started ahead of its spec: the first process has
// been exec'd, the namespaces made and init cloned, and init waits for
// the spec (which only then says what to mount and what to run). A caller
// that will probably run a command starts one beside its own checks
// (parsing, schema, policy), so that the few milliseconds the start takes
// overlap them; the command itself still runs only once [Run] is given a
// Spec, after every check has passed. A Warm is used by at most one Run;
// Close ends one that was not.
type Warm struct {
	net   bool
	ready chan struct{}
	once  sync.Once // taken or closed

	sb   *started
	init *os.Process
	err  error
	cg   *cgroups // v1 cgroups without limits yet, made beside the start
}

// Prestart starts a sandbox for a Spec whose AllowNetwork is net and that
// has no standard input. It returns at once; the start goes on in the
// background. Where commands cannot run, the Warm holds the error and
// Run starts afresh (and reports it).
func Prestart(net bool) *Warm { return PrestartFor(net, nil) }

// PrestartFor is Prestart for a Spec that will probably have the limits
// l (nil: not known): its cgroups get l's memory and process limits at
// once, in the background, rather than when the Spec comes. A Spec with
// other limits gets new cgroups.
func PrestartFor(net bool, l *Limits) *Warm {
	w := &Warm{net: net, ready: make(chan struct{})}
	go func() {
		defer close(w.ready)
		if w.err = canRun(); w.err != nil {
			return
		}
		cgDone := make(chan *cgroups, 1)
		go func() {
			cg := makeV1(nil)
			if l != nil && !cg.limitAhead(*l) {
				cg.remove()
				cg = makeV1(nil)
			}
			cgDone <- cg
		}()
		defer func() { w.cg = <-cgDone }()
		if w.sb, w.err = start(Spec{AllowNetwork: net}, true); w.err != nil {
			return
		}
		if w.init, w.err = w.sb.handshake(); w.err != nil {
			w.sb.parent.Close()
			w.sb = nil
		}
	}()
	return w
}

// take returns w's sandbox for spec, or nil where w is nil, already used,
// failed, or was started for another network setting or without spec's
// standard input, or spec has a scope its premounts hide (then w is
// closed). The output caps become spec's, and
// the run's clock starts now. It also returns w's cgroups, with spec's
// limits set (now, or ahead by PrestartFor), if they suit it (else nil:
// they are removed).
func (w *Warm) take(spec Spec, procs int64) (*started, *os.Process, *cgroups) {
	if w == nil {
		return nil, nil, nil
	}
	taken := false
	w.once.Do(func() { taken = true })
	if !taken {
		return nil, nil, nil
	}
	<-w.ready
	cg := w.cg
	if cg != nil && !cg.limit(spec.Limits, procs) {
		cg.release()
		cg = nil
	}
	if w.sb == nil {
		cg.release()
		return nil, nil, nil
	}
	if spec.AllowNetwork != w.net || len(spec.Stdin) > 0 || underPremounts(spec) {
		w.discard()
		return nil, nil, cg
	}
	w.sb.stdout.setMax(orDefault(spec.MaxStdout))
	w.sb.stderr.setMax(orDefault(spec.MaxStderr))
	w.sb.stdout.setProgress(progressOf(spec, 1))
	w.sb.stderr.setProgress(progressOf(spec, 2))
	w.sb.start = time.Now()
	return w.sb, w.init, cg
}

// premounts are the directories a sandbox started ahead has mounted over
// before its spec came (nsexec_mounts.c's act_premount): a scope, layer or
// work dir below one would be hidden from init, which opens them after.
var premounts = []string{"/dev", "/run", "/proc"}

// underPremounts reports whether a scope, layer or work dir of spec lies
// below one of the premounts, its symlinks resolved; a path that does not
// resolve counts as below one.
func underPremounts(spec Spec) bool {
	for _, s := range spec.Scopes {
		for _, p := range []string{s.Path, s.Upper, s.Work} {
			if p == "" {
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				return true
			}
			for _, m := range premounts {
				if real == m || strings.HasPrefix(real, m+"/") {
					return true
				}
			}
		}
	}
	return false
}

// Close ends w's sandbox unless a Run took it, and removes its cgroups
// (empty: init never joined them), waiting for the start to finish but not
// for init to end (it ends on its own, and with act). Close of nil does
// nothing.
func (w *Warm) Close() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		<-w.ready
		if w.sb != nil {
			w.discard()
		}
		w.cg.release()
	})
}

// discard ends w's sandbox, which gets no spec, in the background
// (started.abort).
func (w *Warm) discard() {
	go func() {
		w.sb.abort(w.init)
		w.sb.parent.Close()
	}()
}
