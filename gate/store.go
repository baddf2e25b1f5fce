package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// idRE is what an action id must look like to name a file: the schema
// makes it a UUID; this guards the path on its own.
var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func attemptsDir(home state.Dir) string { return filepath.Join(home.Root, "attempts") }

func attemptsFile(home state.Dir, id string) (string, error) {
	if !idRE.MatchString(id) {
		return "", fmt.Errorf("action id %q cannot name a file", id)
	}
	return filepath.Join(attemptsDir(home), id+".json"), nil
}

func loadAttempts(home state.Dir, id string) (*attempts, error) {
	name, err := attemptsFile(home, id)
	if err != nil {
		return nil, err
	}
	var a attempts
	b, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &a, nil
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &a, nil
}

// updateAttempts changes the record of id under the state-dir lock, so
// that concurrent act processes lose no count.
func updateAttempts(ctx context.Context, home state.Dir, id string, f func(*attempts) error) error {
	name, err := attemptsFile(home, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(attemptsDir(home), 0o700); err != nil {
		return err
	}
	unlock, err := home.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	a, err := loadAttempts(home, id)
	if err != nil {
		return err
	}
	if err := f(a); err != nil {
		return err
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	// Not fsynced: a dry run's record costs no durable write (a plan is
	// not durable either until apply); a power cut may lose the last
	// update, never tear it.
	return atomicfile.Replace(name, append(b, '\n'), 0o600)
}
