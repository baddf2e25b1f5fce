package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"time"

	"github.com/act-project/act/descriptors"
	"github.com/act-project/act/internal/egress"
	"github.com/act-project/act/internal/problem"
)

// A Fetcher performs the GET or HEAD of a NETWORK_REQUEST. act performs the
// request itself (no command runs), so the host allow-list, the check of
// the addresses a host resolves to and the refusal of redirects elsewhere
// are enforced here, not by a sandbox.
type Fetcher interface {
	Fetch(ctx context.Context, method, rawURL string, headers map[string]string, max int64) (*Response, error)
}

// A Response is what a request brought back: the status and at most max
// bytes of body.
type Response struct {
	Status int
	Body   []byte
	// Cut is true when the body was longer than the limit.
	Cut bool
}

// FetchResult records a NETWORK_REQUEST in the plan.
type FetchResult struct {
	Field  string `json:"field"`
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	SaveTo string `json:"save_to,omitempty"`
}

// HTTPFetcher is the real Fetcher: an HTTP client that follows a redirect
// only to a host Allowed accepts, and connects only through egress's
// dialer, which checks every address a host resolves to after resolving
// it (a loopback, link-local, private or cloud metadata address only if
// Named holds it) and dials the address it checked.
type HTTPFetcher struct {
	// Allowed reports whether the policy's network.allowed_hosts holds host.
	Allowed func(host string) bool
	// Named are the address ranges the policy names
	// (policy.Policy.NamedRanges).
	Named []netip.Prefix
	// Timeout bounds the whole request.
	Timeout time.Duration
	// LookupNetIP resolves host names; nil: the system's resolver. For
	// tests.
	LookupNetIP func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Fetch implements Fetcher.
func (h HTTPFetcher) Fetch(ctx context.Context, method, rawURL string, headers map[string]string, max int64) (*Response, error) {
	if method != http.MethodGet && method != http.MethodHead {
		return nil, fmt.Errorf("method %s: only GET and HEAD can be rolled back", method)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if !h.Allowed(u.Hostname()) {
		return nil, &hostError{host: u.Hostname()}
	}
	dial := egress.Policy{HostAllowed: h.Allowed, Named: h.Named, LookupNetIP: h.LookupNetIP}
	client := &http.Client{
		Timeout: h.Timeout,
		// No proxy from the environment: the request goes out from act,
		// to the address the policy checked.
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dial.DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: h.Timeout,
			DisableKeepAlives:     true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("more than 10 redirects")
			}
			if !h.Allowed(req.URL.Hostname()) {
				return &hostError{host: req.URL.Hostname(), redirect: true}
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	var he *hostError
	var refused *egress.RefusedError
	switch {
	case err != nil && !errors.As(err, &he) && errors.As(err, &refused):
		return nil, &hostError{host: refused.Host, refused: refused}
	case err != nil:
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, err
	}
	out := &Response{Status: resp.StatusCode, Body: body}
	if int64(len(body)) > max {
		out.Body, out.Cut = body[:max], true
	}
	return out, nil
}

// hostError is a request or redirect to a host the policy does not allow,
// or to one that resolves to an address it does not allow (refused).
type hostError struct {
	host     string
	redirect bool
	refused  *egress.RefusedError
}

func (e *hostError) Error() string {
	if e.refused != nil && e.refused.Addr.IsValid() {
		return e.refused.Error()
	}
	if e.redirect {
		return fmt.Sprintf("redirect to %s, which the host policy's network.allowed_hosts does not list", e.host)
	}
	return fmt.Sprintf("host %s is not in the host policy's network.allowed_hosts", e.host)
}

// networkRequest performs op and saves the body to save_to in the layer.
func (r *runner) networkRequest(f []string, op descriptors.NetworkRequestOp) error {
	if r.fetch == nil {
		return fmt.Errorf("%s: %w", problem.FieldPath(f...), ErrNotFileOperation)
	}
	if r.ready != nil {
		if err := r.ready(); err != nil {
			return err
		}
	}
	resp, err := r.fetch.Fetch(r.ctx, op.Method, op.URL, op.Headers, r.maxBody)
	var he *hostError
	switch {
	case errors.As(err, &he):
		return opErr("op.network-host-not-allowed", field(f, "url"), op.URL, err, "%v", err)
	case err != nil:
		return opErr("op.network-failed", field(f, "url"), op.URL, err, "%s %s failed: %v", op.Method, op.URL, err)
	case resp.Cut:
		return opErr("op.network-too-large", field(f, "url"), op.URL, nil,
			"the response to %s %s is larger than max_disk_mb allows (%d bytes)", op.Method, op.URL, r.maxBody)
	case resp.Status < 200 || resp.Status > 299:
		return opErr("op.network-status", field(f, "url"), op.URL, nil, "%s %s answered HTTP %d", op.Method, op.URL, resp.Status)
	}
	sum := sha256.Sum256(resp.Body)
	r.res.Fetched = append(r.res.Fetched, FetchResult{
		Field: problem.FieldPath(f...), Method: op.Method, URL: op.URL, Status: resp.Status,
		Size: int64(len(resp.Body)), SHA256: hex.EncodeToString(sum[:]), SaveTo: op.SaveTo,
	})
	if op.SaveTo == "" {
		return nil
	}
	return r.writeTo(field(f, "save_to"), nil, op.SaveTo, resp.Body, "", false)
}
