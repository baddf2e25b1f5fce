package sandbox

import "github.com/act-project/act/internal/rmtree"

// RemoveAll removes dir and everything in it, even directories a command
// left at mode 000 or 555 ([rmtree.RemoveAll]).
func RemoveAll(dir string) error { return rmtree.RemoveAll(dir) }
