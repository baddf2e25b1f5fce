package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/act-project/act/internal/atomicfile"
	"github.com/act-project/act/internal/state"
)

// A Refusal is an earlier outcome of an action id that a person must see
// before the same id goes ahead without one: a dry run rejected (exit 6),
// a policy block (4) or a failed precondition (5).
type Refusal struct {
	Digest string    `json:"descriptor_digest"`
	Code   int       `json:"exit_code"`
	Rule   string    `json:"rule"`
	At     time.Time `json:"at"`
}

// attempts is what act keeps of one action id besides its plans and its
// action record: <home>/attempts/<action id>.json.
type attempts struct {
	// Refusals are the earlier refusals, oldest first.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Runs counts how often the sandbox ran the id's commands.
	Runs int `json:"runs"`
	// Plans are the id's saved plans, oldest first.
	Plans []string `json:"plans,omitempty"`
}

// fileID reports whether an action id may name a file: a letter or digit,
// then at most 127 letters, digits, dots, underscores and dashes. The
// schema makes it a UUID; this guards the path on its own. (Checked by
// hand: the regular expression's 127-fold repetition cost every act
// process half a millisecond to compile at start-up.)
func fileID(id string) bool {
	if id == "" || len(id) > 128 || !alnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func attemptsFile(home state.Dir, id string) (string, error) {
	if !fileID(id) {
		return "", fmt.Errorf("action id %q cannot name a file", id)
	}
	return home.AttemptsFile(id), nil
}

func loadAttempts(home state.Dir, id string) (*attempts, error) {
	name, err := attemptsFile(home, id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &attempts{}, nil
	case err != nil:
		return nil, err
	}
	a, _, err := lastAttempts(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return a, nil
}

// maxAttemptsLog is the size past which an update rewrites the attempts
// file with its latest record alone, instead of appending to it.
const maxAttemptsLog = 64 << 10

// lastAttempts reads an attempts file: one JSON record per line, the last
// whole line the one that counts (docs/state.md). It also returns the
// length of b up to that line's end: what follows it is the tail of an
// append a crash cut short, which an update cuts off.
func lastAttempts(b []byte) (*attempts, int, error) {
	end := bytes.LastIndexByte(b, '\n') + 1
	if end == 0 {
		// Empty, or the id's first record cut short: no update counted yet.
		return &attempts{}, 0, nil
	}
	line := b[bytes.LastIndexByte(b[:end-1], '\n')+1 : end]
	var a attempts
	if err := json.Unmarshal(line, &a); err != nil {
		return nil, 0, err
	}
	return &a, end, nil
}

// updateAttempts changes the record of id under the state-dir lock, so
// that concurrent act processes lose no count. An update appends the new
// record as a line: no file is created or removed after an id's first
// (each would cost the next file act creates a slower inode allocation on
// ext4, which skips inodes freed in the last half minute).
func updateAttempts(ctx context.Context, home state.Dir, id string, f func(*attempts) error) error {
	name, err := attemptsFile(home, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home.Attempts(), 0o700); err != nil {
		return err
	}
	unlock, err := home.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// Not fsynced: a dry run's record costs no durable write (a plan is
	// not durable either until apply); a power cut may lose the last
	// update, never tear it.
	file, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer file.Close()
	old, err := io.ReadAll(file)
	if err != nil {
		return err
	}
	a, end, err := lastAttempts(old)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f(a); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if end+len(b) > maxAttemptsLog {
		return atomicfile.Replace(name, b, 0o600)
	}
	if end < len(old) {
		if err := file.Truncate(int64(end)); err != nil {
			return err
		}
	}
	_, err = file.WriteAt(b, int64(end))
	return err
}
