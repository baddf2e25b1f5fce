package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/act-project/act/internal/atomicfile"
)

// PruneBefore drops the bodies of the oldest records stamped before t,
// keeping each one's leaf hash and checkpoint in a stub line so Verify
// still proves the whole tree, and appends a gc record saying what it
// pruned. It returns that record's PruneInfo (Count 0: nothing to prune,
// and nothing recorded).
func (l *Log) PruneBefore(ctx context.Context, t time.Time) (PruneInfo, error) {
	unlock, err := l.lock()
	if err != nil {
		return PruneInfo{}, err
	}
	defer unlock()
	info, err := l.pruneLocked(t)
	if err != nil || info.Count == 0 {
		return info, err
	}
	_, err = l.appendLocked(ctx, []Event{{Name: EventGC, Status: "pruned", Pruned: &info,
		Reason: fmt.Sprintf("pruned %d audit record bodies through record %d (before %s)", info.Count, info.Through, t.UTC().Format(time.RFC3339))}}, nil)
	return info, err
}

// GC is PruneBefore for a gc that did more than prune: it prunes the
// records stamped before t, then appends ev, a gc record, whether or not
// anything was pruned, with ev.Pruned set to what was.
func (l *Log) GC(ctx context.Context, t time.Time, ev Event) (PruneInfo, error) {
	if ev.Name != EventGC {
		return PruneInfo{}, fmt.Errorf("audit: GC records a gc event, not %q", ev.Name)
	}
	unlock, err := l.lock()
	if err != nil {
		return PruneInfo{}, err
	}
	defer unlock()
	info, err := l.pruneLocked(t)
	if err != nil {
		return info, err
	}
	ev.Pruned = &info
	_, err = l.appendLocked(ctx, []Event{ev}, nil)
	return info, err
}

// pruneLocked replaces the bodies of the records stamped before t with
// stubs, under the writers' lock.
func (l *Log) pruneLocked(t time.Time) (PruneInfo, error) {
	if err := l.refresh(); err != nil {
		return PruneInfo{}, err
	}
	data, err := io.ReadAll(io.NewSectionReader(l.f, 0, l.size))
	if err != nil {
		return PruneInfo{}, err
	}
	info := PruneInfo{Before: t.UTC()}
	var out []byte
	for seq := uint64(0); len(data) > 0; seq++ {
		i := bytes.IndexByte(data, '\n')
		raw := data[:i+1]
		data = data[i+1:]
		ln, err := decodeLine(raw[:i])
		if err != nil {
			return info, fmt.Errorf("%w: record %d: %v", ErrDamaged, seq, err)
		}
		if ln.Pruned == nil {
			leaf, p, err := ln.leafHash()
			if err != nil {
				return info, fmt.Errorf("%w: record %d: %v", ErrDamaged, seq, err)
			}
			st, err := decodeStatement(p)
			if err != nil {
				return info, fmt.Errorf("%w: record %d: %v", ErrDamaged, seq, err)
			}
			if !st.Predicate.Time.Before(t) {
				out = append(out, raw...)
				out = append(out, data...)
				break
			}
			lh := sha256.Sum256(raw[:i])
			ln = &line{Pruned: &stub{Seq: seq, Leaf: hex.EncodeToString(leaf[:]), Line: hex.EncodeToString(lh[:]), Time: st.Predicate.Time}, Checkpoint: ln.Checkpoint}
			info.Count++
			info.Through = seq
			raw, err = encodeLine(ln)
			if err != nil {
				return info, err
			}
		}
		out = append(out, raw...)
	}
	if info.Count == 0 {
		return info, nil
	}
	if int64(len(out)) == 0 {
		return info, nil
	}
	if err := atomicfile.WriteFile(filepath.Join(l.dir, LogFile), out, 0o600); err != nil {
		return info, err
	}
	if err := l.reopenIfReplaced(); err != nil {
		return info, err
	}
	return info, l.refresh()
}
