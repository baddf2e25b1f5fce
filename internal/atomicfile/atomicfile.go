// Package atomicfile writes files so that a reader, or the next process
// after a crash, sees either the old content or the new, never a part.
//
// The sequence is the one every durable write in act follows: a temporary
// file in the same directory, write, fsync, close, rename over the target,
// fsync the directory. The temporary file is removed on error.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile atomically and durably replaces name with data and mode perm.
func WriteFile(name string, data []byte, perm fs.FileMode) error {
	return write(name, data, perm, true)
}

// Replace atomically replaces name with data and mode perm, without making
// it durable: a reader sees the old content or the new, and a power cut
// may lose the change (never tear it). For records whose loss costs
// little, written where an fsync would cost much.
func Replace(name string, data []byte, perm fs.FileMode) error {
	return write(name, data, perm, false)
}

func write(name string, data []byte, perm fs.FileMode, durable bool) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if durable {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, name); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	return SyncDir(dir)
}

// SyncDir makes the entries of directory dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
