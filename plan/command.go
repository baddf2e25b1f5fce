package plan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/egress"
	"github.com/act-project/act/internal/problem"
	"github.com/act-project/act/internal/redact"
	"github.com/act-project/act/policy"
	"github.com/act-project/act/sandbox"
	"github.com/act-project/act/sandbox/isolate"
	"golang.org/x/sys/unix"
)

// MaxCommandOutput caps each captured output stream of a command.
const MaxCommandOutput = 64 << 10

// defaultPath is the PATH of a command whose env sets none and act has
// none either; the command rules resolve programs through the same.
const defaultPath = policy.DefaultCommandPath

// A CommandResult records one command run in the sandbox: its argv, exit,
// the cap that stopped it if any, and its output, capped and redacted.
type CommandResult struct {
	Field     string            `json:"field"`
	Argv      []string          `json:"argv"`
	ExitCode  int               `json:"exit_code"`
	Signal    string            `json:"signal,omitempty"`
	CapHit    string            `json:"cap_hit,omitempty"`
	Stdout    string            `json:"stdout"`
	Stderr    string            `json:"stderr"`
	StdoutCut bool              `json:"stdout_cut,omitempty"`
	StderrCut bool              `json:"stderr_cut,omitempty"`
	WallMs    int64             `json:"wall_ms"`
	CPUMs     int64             `json:"cpu_ms"`
	Caps      map[string]string `json:"caps,omitempty"`
	// Cwd is the directory a report_cwd shell script ended in, as its
	// shell reported it: what the command says, never checked here
	// (docs/descriptor.md). Empty when it did not end successfully.
	Cwd string `json:"cwd,omitempty"`
	// Egress is what the command asked of the egress proxy, one line a
	// request ("CONNECT proxy.golang.org:443 allowed", or refused and
	// why), the first maxEgressLog of them.
	Egress []string `json:"egress,omitempty"`
	// HomeWrote counts and names what the command made in the masked
	// home, which a throwaway layer took and the sandbox's end discarded
	// (docs/sandbox-filesystem.md, "The masked home"): never promoted.
	HomeWrote *Discarded `json:"home_wrote,omitempty"`
	// Caches say what act kept of what the command added to its own
	// caches (the policy's sandbox.persistent_caches) and what it refused
	// (docs/sandbox-filesystem.md, "A persistent cache of act's own").
	Caches []CacheKept `json:"caches,omitempty"`
	// Refused are the requests the egress proxy refused by the policy
	// (the first maxEgressLog): what act says the command was denied,
	// and which setting would allow it (docs/sandbox.md, "Network").
	Refused []NetworkRefusal `json:"network_refused,omitempty"`
}

// CacheKept is what act kept of a command's additions to one of its own
// caches, at Path, and how many it refused, the first of them with why.
type CacheKept struct {
	Path string `json:"path"`
	// Dropped, if not empty, is why act emptied this cache before the
	// command ran: the first of it that failed verification, "path: why"
	// (docs/sandbox-filesystem.md). The command saw the user's cache alone.
	Dropped string   `json:"dropped,omitempty"`
	Kept    int      `json:"kept"`
	Refused int      `json:"refused,omitempty"`
	Why     []string `json:"why,omitempty"`
}

// RuleCacheRefused: act refused to keep some of what a command added to
// one of its own caches.
const RuleCacheRefused = "sandbox.cache-refused"

// RuleCacheDropped: act's own cache failed verification before a command
// was to see it, and act emptied it.
const RuleCacheDropped = "sandbox.cache-dropped"

// RuleCacheChanged: act's own cache, verified before a command ran, fails
// verification after it: the plan is refused.
const RuleCacheChanged = "sandbox.cache-changed"

// testOnlyAfterCacheCheck is called with act's own Go module cache once
// it has been checked before a command: tests change it there, as an
// agent running beside act would.
var testOnlyAfterCacheCheck = func(own string) {}

// A NetworkRefusal is one request of a command the egress proxy refused.
type NetworkRefusal struct {
	// Target is host:port as the command asked for it.
	Target string `json:"target"`
	// Reason is the proxy's, one sentence.
	Reason string `json:"reason"`
	// Setting is the host policy's setting that would allow it.
	Setting string `json:"setting"`
}

// RuleNetworkRefused: the egress proxy refused requests of a command.
const RuleNetworkRefused = "op.network-refused"

// maxEgressLog is how many of a command's requests to the egress proxy
// its result names.
const maxEgressLog = 64

// ProxyURL is the egress proxy as a command reaches it.
var ProxyURL = fmt.Sprintf("http://127.0.0.1:%d", isolate.ProxyPort)

// The run's CA and the system's roots with it, as the sandbox sees them
// when the egress proxy gives credentials (docs/sandbox.md,
// "Credentials"), and the variables that make the usual clients trust
// them: node adds NODE_EXTRA_CA_CERTS to its own roots (npm's own agent
// does not: it reads npm_config_cafile); Go, curl, OpenSSL, pip, requests,
// git and cargo read the bundle instead of the system's.
const (
	CAFile       = "/dev/act-egress-ca.pem"
	CABundleFile = "/dev/act-egress-ca-bundle.pem"
)

var caEnv = []string{"NODE_EXTRA_CA_CERTS=" + CAFile, "npm_config_cafile=" + CABundleFile,
	"SSL_CERT_FILE=" + CABundleFile, "CURL_CA_BUNDLE=" + CABundleFile, "REQUESTS_CA_BUNDLE=" + CABundleFile,
	"PIP_CERT=" + CABundleFile, "GIT_SSL_CAINFO=" + CABundleFile, "CARGO_HTTP_CAINFO=" + CABundleFile}

// proxyEnv are the variables that point HTTP clients (Go, npm, pip, curl)
// at the egress proxy; the sandbox has no other way out.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"}

// A Commander runs a command over the layer. Build's is the namespace
// sandbox; nil refuses commands.
type Commander interface {
	// Command runs a command of the operation: what it writes lands in
	// the layer.
	Command(ctx context.Context, f []string, argv []string, workdir string, env map[string]string, stdin string) (*CommandResult, error)
	// Shell runs the shell script argv ([sh, -c, SCRIPT]) as Command
	// does, and records the directory it ended in (report_cwd).
	Shell(ctx context.Context, f []string, argv []string, workdir string, env map[string]string, stdin string) (*CommandResult, error)
	// Verify runs a verification command over the layer as it is, in a
	// throwaway copy: nothing it writes reaches the layer. It returns
	// what the command changed all the same (docs/sandbox.md,
	// "Verification").
	Verify(ctx context.Context, f []string, argv []string, workdir string, env map[string]string) (*CommandResult, Wrote, error)
}

// Wrote is what a verification command changed in the scope, thrown away:
// how many paths, and the first of them (at most isolate.MaxWrote).
type Wrote struct {
	Paths []string
	Count int64
}

// sandboxCommander runs commands with isolate over a LayerSystem: each
// scope path is an overlay whose upper dir is the layer's, so what a
// command changes lands in the same layer file operations write. With a
// disk cap (always, for a valid descriptor) the upper and work dirs are on
// the sandbox's tmpfs of that size, seeded from the layer and copied back
// to it after the run: no work dir is needed here then.
type sandboxCommander struct {
	// started, if not nil, is called once a command has run (Ahead.Started),
	// the first time only.
	started func()
	warm    *isolate.Warm // for the first command only
	before  func() error  // isolate.Spec.Before of each run (Build's ready: once)
	layer   *sandbox.LayerSystem
	scopes  []string
	workDir string
	// egress, if not nil, is the proxy that is a command's only way out
	// (the descriptor asks for the network, and the policy allows it).
	egress *egress.Proxy
	// loopback: IPv4/IPv6 sockets on the sandbox's own loopback without
	// the network (the policy's sandbox.loopback).
	loopback bool
	limits   isolate.Limits
	hide     []string
	mask     []string // home roots the command sees empty (isolate.Spec.Mask)
	binds    []string // below them, what builds need, read-only (isolate.Spec.Binds)
	reads    []string // the system trees files may be read in (isolate.Spec.Reads)
	caches   []isolate.Cache
	// persistent are those of caches that are act's own too (the
	// policy's persistent caches), cacheBound what they may hold
	// together, in bytes.
	persistent []persistentCache
	cacheBound int64
	path       string // the caller's PATH
	home       string // the password database's home of the user act runs as
	// homeRW is that home where commands see it writable through a
	// throwaway layer (isolate.Spec.Home), or "".
	homeRW string
	// pii also redacts e-mail addresses and phone numbers (redact.pii).
	pii bool
	// progress, if not nil, gets each line of a command's output as it
	// comes (Options.Progress).
	progress func(stream int, line string)
	// sums, if not nil, are given each scope's tmpfs upper as a run that
	// keeps its changes copies it out (isolate.Spec.Uppers).
	sums *upperSums

	// files are the tools' configurations as copies with placeholders
	// for their secrets (isolate.Spec.Files); secrets are what they hold
	// placeholders for, which the egress proxy may put back in a request
	// to the secret's host (docs/sandbox.md).
	files   []isolate.File
	secrets []ConfigSecret
}

// Command implements Commander.
func (s *sandboxCommander) Command(ctx context.Context, f []string, argv []string, workdir string, env map[string]string, stdin string) (*CommandResult, error) {
	out, _, err := s.run(ctx, f, argv, workdir, env, stdin, false)
	return out, err
}

// reportCwdScript runs a report_cwd script ($1) as an agent's
// persistent shell runs a command: eval'd, and once it ended
// successfully, the directory it ended in (pwd -P) is written, between
// cwdMark and cwdEnd, to what was standard error at its start (fd 9, so
// that the script's own redirections do not take it). $0 stays sh and
// the script sees no positional parameters, as under sh -c SCRIPT.
const reportCwdScript = `exec 9>&2; __act_script=$1; shift; eval "$__act_script" && printf '\036act-cwd:%s\036\n' "$(pwd -P)" >&9`

// cwdMark and cwdEnd frame the directory a report_cwd script reports.
const (
	cwdMark = "\x1eact-cwd:"
	cwdEnd  = "\x1e\n"
)

// Shell implements Commander: argv's script runs through
// reportCwdScript; the record keeps argv, and the directory reported last
// on its standard error, taken out of it, is its Cwd.
func (s *sandboxCommander) Shell(ctx context.Context, f []string, argv []string, workdir string, env map[string]string, stdin string) (*CommandResult, error) {
	if !descriptors.ShellScript(argv) {
		return nil, fmt.Errorf("%s: report_cwd runs a shell script, [sh, -c, SCRIPT]", problem.FieldPath(f...))
	}
	out, res, err := s.run(ctx, f, []string{argv[0], "-c", reportCwdScript, argv[0], argv[2]}, workdir, env, stdin, false)
	if err != nil {
		return nil, err
	}
	out.Argv = s.redactArgv(argv)
	stderr := string(res.Stderr)
	if i := strings.LastIndex(stderr, cwdMark); i >= 0 {
		if j := strings.Index(stderr[i+len(cwdMark):], cwdEnd); j >= 0 {
			out.Cwd = stderr[i+len(cwdMark) : i+len(cwdMark)+j]
			stderr = stderr[:i] + stderr[i+len(cwdMark)+j+len(cwdEnd):]
			out.Stderr = s.redact(stderr)
		}
	}
	return out, nil
}

// Verify implements Commander: the command runs with isolate's Discard,
// its overlays' upper dirs on the sandbox's tmpfs, seeded from the layer
// and thrown away with it. Without a disk cap (never, for a valid
// descriptor) the upper dirs would be the layer's own, written in place:
// it is refused.
func (s *sandboxCommander) Verify(ctx context.Context, f []string, argv []string, workdir string, env map[string]string) (*CommandResult, Wrote, error) {
	if s.limits.DiskMB <= 0 {
		return nil, Wrote{}, fmt.Errorf("%s: a verification command runs in a throwaway layer on the sandbox's tmpfs, which needs resources.max_disk_mb", problem.FieldPath(f...))
	}
	out, res, err := s.run(ctx, f, argv, workdir, env, "", true)
	if err != nil {
		return nil, Wrote{}, err
	}
	return out, Wrote{Paths: res.Wrote, Count: res.WroteCount}, nil
}

// run runs argv in the sandbox over the layer: what it writes lands in the
// layer, or with discard is thrown away (isolate.Spec.Discard).
func (s *sandboxCommander) run(ctx context.Context, f []string, argv []string, workdir string, env map[string]string, stdin string, discard bool) (*CommandResult, *isolate.Result, error) {
	var scopes []isolate.Scope
	inPlace := s.limits.DiskMB <= 0
	for i, root := range s.scopes {
		if err := s.layer.CopyUpDir(root); err != nil {
			return nil, nil, err
		}
		sc := isolate.Scope{Path: root, Upper: s.layer.Upper(root)}
		if inPlace {
			sc.Work = filepath.Join(s.workDir, strconv.Itoa(i))
			if err := isolate.RemoveWorkDir(sc.Work); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			if err := os.MkdirAll(sc.Work, 0o700); err != nil {
				return nil, nil, err
			}
		}
		scopes = append(scopes, sc)
	}
	if inPlace {
		defer func() {
			for i := range s.scopes {
				isolate.RemoveWorkDir(filepath.Join(s.workDir, strconv.Itoa(i)))
			}
		}()
	}
	if workdir == "" && len(s.scopes) > 0 {
		workdir = s.scopes[0]
	}
	warm := s.warm
	s.warm = nil
	envl := envList(env, s.path, s.home)
	var (
		proxy   func(context.Context, net.Listener)
		mu      sync.Mutex
		egLog   []string
		refused []NetworkRefusal
	)
	if s.egress != nil {
		p := *s.egress
		p.Log = func(e egress.Event) {
			line := e.Method + " " + e.Target + " allowed"
			switch {
			case e.Credential:
				line = e.Method + " " + e.Target + " allowed, with the credentials the policy gives that host"
			case !e.Allowed || e.Err != "":
				line = e.Method + " " + e.Target + " refused: " + e.Err
			}
			mu.Lock()
			if len(egLog) < maxEgressLog {
				egLog = append(egLog, line)
			}
			if !e.Allowed && len(refused) < maxEgressLog {
				refused = append(refused, NetworkRefusal{Target: e.Target, Reason: e.Err, Setting: "network.allowed_hosts"})
			}
			mu.Unlock()
		}
		proxy = func(ctx context.Context, ln net.Listener) { _ = p.Serve(ctx, ln) }
		envl = slices.DeleteFunc(envl, func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(proxyEnv, k) || k == "NO_PROXY" || k == "no_proxy"
		})
		for _, k := range proxyEnv {
			envl = append(envl, k+"="+ProxyURL)
		}
		if p.CA != nil {
			// The run's CA, which signs the proxy's certificates for the
			// hosts it gives credentials to: trusted by this sandbox alone.
			for _, kv := range caEnv {
				if k, _, _ := strings.Cut(kv, "="); !slices.ContainsFunc(envl, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
					envl = append(envl, kv)
				}
			}
		}
	}
	caches := s.caches
	dropped := map[int]string{} // act's own caches emptied before the run, and why
	if len(s.persistent) > 0 {
		// What the command writes in act's own caches is copied out for
		// mergeCache, but for a verification's: thrown away.
		caches = slices.Clone(s.caches)
		for _, pc := range s.persistent {
			if pc.goModules {
				envl = goVerifiedEnv(envl)
				// Verified each time it is shown: the agent may have
				// written it since it was kept (docs/sandbox-filesystem.md).
				own := caches[pc.index].Own
				why, err := verifyGoModCache(own, caches[pc.index].Dir)
				if err != nil {
					return nil, nil, fmt.Errorf("verify act's own cache %s: %w", caches[pc.index].Path, err)
				}
				if why != "" {
					if err := dropCache(own); err != nil {
						return nil, nil, fmt.Errorf("empty act's own cache %s, which failed verification (%s): %w", caches[pc.index].Path, why, err)
					}
					dropped[pc.index] = why
				}
				testOnlyAfterCacheCheck(own)
			}
			if discard {
				continue
			}
			out := filepath.Join(s.workDir, "cache-"+strconv.Itoa(pc.index))
			if err := sandbox.RemoveAll(out); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return nil, nil, err
			}
			defer sandbox.RemoveAll(out)
			caches[pc.index].Out = out
		}
	}
	progress, flush := s.lines()
	var uppers func(int, *os.File)
	if s.sums != nil && !discard {
		uppers = func(k int, dir *os.File) {
			if k < 0 || k >= len(scopes) {
				dir.Close()
				return
			}
			s.sums.add(scopes[k].Path, dir)
		}
	}
	res, err := isolate.Run(ctx, isolate.Spec{
		Argv: argv, Workdir: workdir, Env: envl, Stdin: []byte(stdin), Proxy: proxy,
		Scopes: scopes, Loopback: s.loopback, Limits: s.limits, Hide: s.hide, Mask: s.mask, Binds: s.binds, Files: s.files, Reads: s.reads, Caches: caches, Home: s.homeRW,
		MaxStdout: MaxCommandOutput, MaxStderr: MaxCommandOutput, Warm: warm, Before: s.before, Progress: progress,
		Discard: discard, Uppers: uppers,
	})
	flush()
	if err != nil {
		return nil, nil, err
	}
	if s.started != nil {
		s.started()
		s.started = nil
	}
	out := &CommandResult{
		Field: problem.FieldPath(f...), Argv: s.redactArgv(argv), ExitCode: res.ExitCode,
		Stdout: s.redact(string(res.Stdout)), Stderr: s.redact(string(res.Stderr)),
		StdoutCut: res.StdoutCut, StderrCut: res.StderrCut,
		WallMs: res.Usage.Wall.Milliseconds(), CPUMs: res.Usage.CPU.Milliseconds(),
		Caps: map[string]string{},
	}
	for _, pc := range s.persistent {
		// Checked again after the run: what changed in act's cache while
		// the command ran (an agent beside act) and stays, the command
		// may have built from (docs/sandbox-filesystem.md).
		c := caches[pc.index]
		if !pc.goModules {
			continue
		}
		why, err := verifyGoModCache(c.Own, c.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("verify act's own cache %s: %w", c.Path, err)
		}
		if why != "" {
			if err := dropCache(c.Own); err != nil {
				return nil, nil, fmt.Errorf("empty act's own cache %s, which failed verification (%s): %w", c.Path, why, err)
			}
			return nil, nil, opErr(RuleCacheChanged, f, c.Path, nil, "act's own cache %s changed while the command ran and fails verification now: %s; "+
				"what the command made may be built from it, so the plan is refused, and act emptied the cache (docs/sandbox-filesystem.md)", c.Path, why)
		}
	}
	for _, pc := range s.persistent {
		c := caches[pc.index]
		var m cacheMerge
		if c.Out != "" {
			if m, err = mergeCache(c.Out, c.Own, c.Dir, s.cacheBound, pc.goModules); err != nil {
				return nil, nil, fmt.Errorf("act's own cache %s: %w", c.Path, err)
			}
		}
		if m.Kept > 0 || m.Refused > 0 || dropped[pc.index] != "" {
			out.Caches = append(out.Caches, CacheKept{Path: c.Path, Dropped: dropped[pc.index], Kept: m.Kept, Refused: m.Refused, Why: m.Why})
		}
	}
	if res.HomeWroteCount > 0 {
		hw := &Discarded{Count: int(res.HomeWroteCount)}
		for _, p := range res.HomeWrote {
			hw.Paths = append(hw.Paths, s.redact(p))
		}
		out.HomeWrote = hw
	}
	mu.Lock()
	for _, l := range egLog {
		out.Egress = append(out.Egress, s.redact(l))
	}
	for _, r := range refused {
		r.Target, r.Reason = s.redact(r.Target), s.redact(r.Reason)
		out.Refused = append(out.Refused, r)
	}
	mu.Unlock()
	if res.Signal != 0 {
		// SIGKILL, not "killed": the name a person and
		// doors.CommandFailed read.
		out.Signal = unix.SignalName(res.Signal)
	}
	if res.CapHit != nil {
		out.CapHit = res.CapHit.String()
	}
	for c, m := range res.Enforcement {
		out.Caps[string(c)] = m
	}
	return out, res, nil
}

// A Warm is a sandbox started ahead of a plan's first command
// ([PrestartSandbox]).
type Warm = isolate.Warm

// Settle waits until the sandboxes of every plan built so far have ended
// (isolate.Settle): a process calls it before it exits.
func Settle() { isolate.Settle() }

// PoolSandboxCgroups makes a process that plans again and again (act mcp)
// keep the cgroups of its finished sandboxes for the next ones, or not
// (isolate.PoolCgroups).
func PoolSandboxCgroups(on bool) { isolate.PoolCgroups(on) }

// PrestartSandbox starts the sandbox of a command that will probably be
// planned, beside the caller's checks: the start's few milliseconds
// overlap them, and nothing runs in it until Build has a command for it
// (after every check). Without the network: a command with it starts its
// own. The caller passes it in Options.Warm and closes it.
func PrestartSandbox() *Warm { return isolate.Prestart(false) }

// PrestartSandboxLike is PrestartSandbox for a plan that will probably
// have d's resources (a server's next plan, like its last one): the
// memory and process limits go on the sandbox's cgroups ahead, and a plan
// with others gets new ones.
func PrestartSandboxLike(d *descriptors.Descriptor) *Warm {
	l := limits(d, false) // the warm sandbox's; enforcement is chosen per run
	return isolate.PrestartFor(false, &l)
}

// limits are the caps of the sandbox of d's commands (memoryTotal: the
// policy demands a total memory cap, isolate.Limits.MemoryTotal).
func limits(d *descriptors.Descriptor, memoryTotal bool) isolate.Limits {
	r := d.Resources
	return isolate.Limits{WallMs: r.MaxDurationMs, CPUMs: r.MaxCPUMs, MemoryMB: r.MaxMemoryMB, DiskMB: r.MaxDiskMB, MemoryTotal: memoryTotal}
}

// envList is a command's environment: the caller's PATH (else
// defaultPath) and home (HOME, the password database's: the sandbox shows
// it masked, with the policy's sandbox.home_visible and caches), then the
// operation's env, which may set either. docs/sandbox.md, "Environment".
func envList(env map[string]string, path, home string) []string {
	keys := sortedKeys(env)
	out := make([]string, 0, len(keys)+2)
	if path == "" {
		path = defaultPath
	}
	if _, ok := env["PATH"]; !ok {
		out = append(out, "PATH="+path)
	}
	if _, ok := env["HOME"]; !ok && home != "" {
		out = append(out, "HOME="+home)
	}
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	sort.Strings(out)
	return out
}

// command runs one command through r's Commander and turns its outcome
// into an OpError when it failed: a cap hit, a non-zero exit.
func (r *runner) command(f []string, what string, argv []string, workdir string, env map[string]string, stdin string) error {
	return r.runCommand(f, what, argv, workdir, env, stdin, false)
}

// runCommand is command, or with shell a report_cwd script (Commander.Shell).
func (r *runner) runCommand(f []string, what string, argv []string, workdir string, env map[string]string, stdin string, shell bool) error {
	if r.exec == nil {
		return fmt.Errorf("%s: %w", problem.FieldPath(f...), ErrNotFileOperation)
	}
	if workdir != "" {
		if _, err := r.resolve(field(f, "workdir"), workdir, true); err != nil {
			return err
		}
	}
	run := r.exec.Command
	if shell {
		run = r.exec.Shell
	}
	res, err := run(r.ctx, f, argv, workdir, env, stdin)
	return r.outcome(f, what, argv, res, err)
}

// maxWroteShown is how many of the paths a verification command wrote its
// warning names.
const maxWroteShown = 5

// verify runs the verification command argv through r's Commander, over
// the layer in a throwaway copy, and warns of what it wrote
// (RuleVerificationWrote): nothing of it is in the plan.
func (r *runner) verify(f []string, argv []string, workdir string, env map[string]string) error {
	if r.exec == nil {
		return fmt.Errorf("%s: %w", problem.FieldPath(f...), ErrNotFileOperation)
	}
	if workdir != "" {
		if _, err := r.resolve([]string{"verification", "workdir"}, workdir, true); err != nil {
			return err
		}
	}
	res, wrote, err := r.exec.Verify(r.ctx, f, argv, workdir, env)
	if err == nil && wrote.Count > 0 {
		shown := wrote.Paths[:min(len(wrote.Paths), maxWroteShown)]
		what := fmt.Sprintf("%d paths, which were thrown away", wrote.Count)
		if wrote.Count == 1 {
			what = "1 path, which was thrown away"
		}
		msg := fmt.Sprintf("the verification command wrote %s: %s", what, strings.Join(shown, ", "))
		if more := wrote.Count - int64(len(shown)); more > 0 {
			msg += fmt.Sprintf(" (and %d more)", more)
		}
		p := ""
		if len(shown) > 0 {
			p = shown[0]
		}
		r.note(RuleVerificationWrote, f, p, "%s", msg)
	}
	return r.outcome(f, "verification command", argv, res, err)
}

// outcome records a command's run (res, or err where it did not run) and
// turns it into an OpError when it failed: a cap hit, a non-zero exit.
func (r *runner) outcome(f []string, what string, argv []string, res *CommandResult, err error) error {
	shown := redact.String(strings.Join(argv, " "))
	var se *isolate.SetupError
	switch {
	case errors.Is(err, isolate.ErrUnavailable):
		return fmt.Errorf("commands are refused: %w", err)
	case errors.As(err, &se):
		return opErr("op.command-not-started", f, shown, err, "the %s could not start: %s", what, se.Msg)
	case err != nil:
		return err
	}
	r.res.Commands = append(r.res.Commands, *res)
	for _, c := range res.Caches {
		if c.Dropped != "" {
			r.note(RuleCacheDropped, f, c.Path, "act emptied its own cache %s before the %s ran: %s (docs/sandbox-filesystem.md); the command saw the user's cache alone",
				c.Path, what, c.Dropped)
		}
		if c.Refused > 0 {
			r.note(RuleCacheRefused, f, c.Path, "act kept %d of what the %s added to its own cache %s and refused %d (docs/sandbox-filesystem.md): %s",
				c.Kept, what, c.Path, c.Refused, strings.Join(c.Why, "; "))
		}
	}
	if res.Caps[string(isolate.CapMemory)] == isolate.MemoryPerProcess && !slices.ContainsFunc(r.res.Notes, func(n Note) bool { return n.Rule == "op.memory-per-process" }) {
		// The plan says, once, that the memory cap is no total here.
		r.note("op.memory-per-process", f, "", "memory cap: %s: no memory cgroup is writable for this user, so each process may map up to resources.max_memory_mb "+
			"(act says this once; policy resources.memory_enforcement: total refuses instead)", isolate.MemoryPerProcess)
	}
	refusal := refusedMessage(what, res.Refused)
	if n, ok := r.exec.(interface{ Network() bool }); ok && !n.Network() && res.ExitCode != 0 && refusal == "" {
		refusal = noNetworkMessage(what, res.Stderr+"\n"+res.Stdout)
	}
	failed := func(e *OpError) error {
		if refusal == "" {
			return e
		}
		// The refusal is why, more often than not: say it beside the
		// failure, since the tool's own message does not (npm's E403).
		return OpErrors{e, opErr(RuleNetworkRefused, f, shown, nil, "%s", refusal)}
	}
	switch {
	case res.CapHit != "":
		return failed(opErr("op.cap-exceeded", f, shown, nil, "the %s was stopped by a cap: %s", what, res.CapHit))
	case res.ExitCode != 0:
		msg := fmt.Sprintf("the %s %q exited with status %d", what, shown, res.ExitCode)
		if res.Signal != "" {
			msg = fmt.Sprintf("the %s %q was killed by %s", what, shown, res.Signal)
		}
		if tail := lastLines(res.Stderr, 5); tail != "" {
			msg += ": " + tail
		}
		if strings.Contains(res.Stderr, "Read-only file system") || strings.Contains(res.Stderr, "Permission denied") {
			msg += " (" + readOnlyHint + ")"
		}
		rule := "op.command-failed"
		if what == "verification command" {
			rule = "op.verification-failed"
		}
		return failed(opErr(rule, f, shown, nil, "%s", msg))
	}
	if refusal != "" {
		r.note(RuleNetworkRefused, f, "", "%s", refusal)
	}
	return nil
}

// readOnlyHint is what a command that failed on a read-only file system,
// or was denied (as root the sandbox's own identity meets the host's
// permissions first), is told: where the sandbox lets it write
// (docs/sandbox-filesystem.md).
const readOnlyHint = "in the sandbox only the declared scopes, /tmp and the home are writable: " +
	"the homes are masked, the person's own home is writable through a throwaway layer (what a command writes there is listed and discarded), " +
	"and what sandbox.home_visible shows there is read-only"

// Network implements the optional interface outcome asks of a
// Commander: whether its commands have the network (the egress proxy).
func (s *sandboxCommander) Network() bool { return s.egress != nil }

// noNetworkSigns are what tools print when a connection fails for lack of
// a network: the sandbox without one refuses their sockets (EACCES), and
// their name lookups fail.
var noNetworkSigns = []string{"dial tcp", "dial udp", "socket: permission denied", "Could not resolve host", "Couldn't connect to server",
	"Temporary failure in name resolution", "Name or service not known", "getaddrinfo", "EAI_AGAIN", "ENOTFOUND", "Network is unreachable",
	"network is unreachable", "Failed to establish a new connection"}

// noNetworkMessage says, of a failed command (what) that had no network
// and whose output reads like a connection that failed for lack of one,
// how a command gets the network; "" when the output does not read so.
func noNetworkMessage(what, out string) string {
	if !slices.ContainsFunc(noNetworkSigns, func(s string) bool { return strings.Contains(out, s) }) {
		return ""
	}
	return fmt.Sprintf("the %s had no network, and its output reads like a connection that failed for lack of one: "+
		"a command reaches the network only through act's egress proxy, when the descriptor asks for it (sandbox.allow_network, scope.network.required) "+
		"and the host policy allows it (network.sandbox_network), and only the hosts of network.allowed_hosts; a package is added by PACKAGE_INSTALL", what)
}

// maxRefusalsNamed is how many refused destinations a message names.
const maxRefusalsNamed = 3

// refusedMessage says what the egress proxy refused a command (what: a
// "command", a "package manager", a "verification command"), why, and the
// setting that would allow it; "" when it refused nothing.
func refusedMessage(what string, refused []NetworkRefusal) string {
	if len(refused) == 0 {
		return ""
	}
	var targets, hosts []string
	reason := refused[0].Reason
	for _, r := range refused {
		if slices.Contains(targets, r.Target) {
			continue
		}
		targets = append(targets, r.Target)
		if h, _, err := net.SplitHostPort(r.Target); err == nil && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	named := targets
	if len(named) > maxRefusalsNamed {
		named = named[:maxRefusalsNamed]
	}
	msg := fmt.Sprintf("act's egress proxy refused the %s's connection to %s (%s)", what, strings.Join(named, ", "), reason)
	if more := len(targets) - len(named); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	if what == "package manager" {
		return msg + fmt.Sprintf("; a PACKAGE_INSTALL or PACKAGE_REMOVE reaches its registry only when the host policy's network.allowed_hosts lists it: add %s there", strings.Join(hosts, ", "))
	}
	return msg + fmt.Sprintf("; if the %s needs it, add %s to the host policy's network.allowed_hosts", what, strings.Join(hosts, ", "))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// packageEnv is the environment of a package manager: act's own PATH (the
// manager the user runs, and what it runs in turn: node, git, …), and its
// home, caches and temporary files in the sandbox's private /tmp, which
// vanishes with it; only what it writes into the scope (node_modules,
// go.mod, …) is kept.
//
// The variables that choose where packages come from (a mirror, a private
// registry, no network at all) are passed on from act's environment, each
// manager only its own ([sourceVars]): a registry's credentials in pip's
// settings are nothing npm's install scripts need to see. Whatever of them
// the manager prints or writes is redacted before it is stored or shown.
//
// Its own configuration it reads from the person's home (home, where the
// sandbox shows it as a copy with placeholders for its secrets, whose
// real values the egress proxy gives the hosts the policy names:
// docs/sandbox.md, "Credentials"): npm's ~/.npmrc, pip's
// ~/.config/pip/pip.conf.
func packageEnv(manager, home string) map[string]string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	env := map[string]string{
		"PATH":                          path,
		"HOME":                          "/tmp",
		"TMPDIR":                        "/tmp",
		"npm_config_cache":              "/tmp/.npm",
		"npm_config_update_notifier":    "false",
		"PIP_CACHE_DIR":                 "/tmp/.pip",
		"PIP_DISABLE_PIP_VERSION_CHECK": "1",
		"GOPATH":                        "/tmp/go",
		"GOCACHE":                       "/tmp/.gocache",
		"GOFLAGS":                       "-modcacherw",
	}
	if filepath.IsAbs(home) {
		switch manager {
		case "npm":
			env["npm_config_userconfig"] = filepath.Join(home, ".npmrc")
		case "pip":
			env["XDG_CONFIG_HOME"] = filepath.Join(home, ".config")
		}
	}
	for _, k := range sourceVars[manager] {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	return env
}

// sourceVars are each package manager's settings of where packages come
// from, which its operations take from act's environment.
var sourceVars = map[string][]string{
	"go":  {"GOPROXY", "GOPRIVATE", "GONOPROXY", "GONOSUMDB", "GOSUMDB", "GOINSECURE"},
	"npm": {"npm_config_registry", "NPM_CONFIG_REGISTRY"},
	"pip": {"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX"},
}

// packageArgv is the command a package operation runs.
// A development dependency is npm's --save-dev (uninstall removes a
// package from every list) and go's -tool (a go.mod tool directive);
// pip has none, which the rules refuse (package.dev-unsupported).
func packageArgv(t descriptors.ActionType, op descriptors.PackageOp) []string {
	install := t == descriptors.PackageInstall
	pkgs, dev := op.Split()
	var argv []string
	switch op.Manager {
	case "npm":
		argv = []string{"npm", "uninstall"}
		if install {
			argv = []string{"npm", "install", "--no-audit", "--no-fund"}
			if dev {
				argv = append(argv, "--save-dev")
			}
		}
	case "pip":
		argv = []string{"pip", "uninstall", "--yes"}
		if install {
			argv = []string{"pip", "install", "--no-input"}
		}
	case "go":
		argv = []string{"go", "get"}
		if dev {
			argv = append(argv, "-tool")
		}
		if !install {
			none := make([]string, len(pkgs))
			for i, p := range pkgs {
				none[i] = p + "@none"
			}
			return append(argv, none...)
		}
	}
	return append(argv, pkgs...)
}

// redactedArgv is argv as the plan records and shows it: each argument
// with the secrets redaction recognises masked.
func redactedArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = redact.String(a)
	}
	return out
}

// redact removes secrets from captured output, and personal data too when
// the policy asks for it.
func (s *sandboxCommander) redact(out string) string {
	if s.pii {
		return redact.PII(out)
	}
	return redact.String(out)
}

func (s *sandboxCommander) redactArgv(argv []string) []string {
	out := redactedArgv(argv)
	if s.pii {
		for i := range out {
			out[i] = redact.PII(out[i])
		}
	}
	return out
}

// lines turns the output a command writes into s.progress's lines, each
// redacted as the recorded output is; flush, called once the command has
// ended, passes on a last line that has no newline. A line longer than
// MaxProgressLine is cut there and the rest of it skipped: one that long
// is more than a stream's capture keeps, so whoever collects the lines
// finds it cut and says so (review.Collector); a shorter line arrives
// whole, however long (a line is no longer cut at 4 KiB unsaid).
func (s *sandboxCommander) lines() (progress func(stream int, p []byte), flush func()) {
	if s.progress == nil {
		return nil, func() {}
	}
	var (
		mu      sync.Mutex
		partial [3][]byte
		skip    [3]bool // the rest of a line cut at MaxProgressLine
	)
	progress = func(stream int, p []byte) {
		if stream != 1 && stream != 2 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for len(p) > 0 {
			i := bytes.IndexByte(p, '\n')
			switch {
			case skip[stream] && i < 0:
				return
			case skip[stream]:
				skip[stream] = false
			case i < 0:
				partial[stream] = append(partial[stream], p...)
				if len(partial[stream]) > MaxProgressLine {
					s.progress(stream, s.redact(string(partial[stream][:MaxProgressLine])))
					partial[stream], skip[stream] = nil, true
				}
				return
			default:
				line := append(partial[stream], p[:i]...)
				partial[stream] = nil
				s.progress(stream, s.redact(string(line[:min(len(line), MaxProgressLine)])))
			}
			p = p[i+1:]
		}
	}
	flush = func() {
		mu.Lock()
		defer mu.Unlock()
		for stream := 1; stream <= 2; stream++ {
			if len(partial[stream]) > 0 {
				s.progress(stream, s.redact(string(partial[stream])))
				partial[stream] = nil
			}
		}
	}
	return progress, flush
}

// MaxProgressLine is the most of one line of output Options.Progress
// gets: one byte more than a stream's capture keeps.
const MaxProgressLine = MaxCommandOutput + 1
