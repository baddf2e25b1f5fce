//go:build !linux

package isolate

import (
	"context"
	"fmt"
)

// Run is unavailable off Linux.
func Run(ctx context.Context, spec Spec) (*Result, error) { return nil, Available() }

// Available reports that isolation needs Linux.
func Available() error {
	return fmt.Errorf("%w: the sandbox needs Linux namespaces", ErrUnavailable)
}

// A Warm is a sandbox started ahead; off Linux there is none.
type Warm struct{}

// Prestart does nothing off Linux.
func Prestart(net bool) *Warm { return nil }

// Close does nothing off Linux.
func (w *Warm) Close() {}

// EnterUserScope does nothing off Linux.
func EnterUserScope(args []string) {}
