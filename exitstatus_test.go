package main

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/act-project/act/cmd"
)

// seenExits records, for each act command, the exit codes the scripts saw
// it end with (exitcode N act ...), and one script line that did.
var seenExits = struct {
	sync.Mutex
	m map[string]map[int]string
}{m: map[string]map[int]string{}}

// recordExit notes that act args (after the program name) exited with code.
func recordExit(prog string, args []string, code int) {
	if prog != "act" {
		return
	}
	word := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--home" || a == "--policy" {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		word = a
		break
	}
	if word == "" {
		return
	}
	seenExits.Lock()
	defer seenExits.Unlock()
	if seenExits.m[word] == nil {
		seenExits.m[word] = map[int]string{}
	}
	seenExits.m[word][code] = "act " + strings.Join(args, " ")
}

var exitItem = regexp.MustCompile(`^(\d) `)

// checkSeenExits fails for each exit code a script saw a command end with
// that the command's help does not list under EXIT STATUS.
func checkSeenExits(t *testing.T) {
	app := cmd.NewApp()
	seenExits.Lock()
	defer seenExits.Unlock()
	for word, codes := range seenExits.m {
		var help string
		for _, c := range app.Commands {
			if c.HasName(word) {
				help = c.Description
			}
		}
		if help == "" {
			continue // not a command (a usage error's test)
		}
		_, sec, _ := strings.Cut(help, "EXIT STATUS:\n")
		listed := map[int]bool{}
		for _, it := range strings.Split(sec, ",") {
			if m := exitItem.FindStringSubmatch(strings.TrimSpace(it)); m != nil {
				c, _ := strconv.Atoi(m[1])
				listed[c] = true
			}
		}
		// act run ends with the command's own code, whatever it is, and
		// its help says so.
		anyCode := strings.Contains(sec, "the command's own code")
		for code, line := range codes {
			if !listed[code] && !anyCode {
				t.Errorf("act %s exits %d (%s) but its help's EXIT STATUS does not list it:\n%s", word, code, line, sec)
			}
		}
	}
}
