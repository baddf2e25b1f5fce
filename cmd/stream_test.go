package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/act-project/act/review"
)

// TestOutputStream: the lines a command writes as they come — after the
// time elapsed, one-line fields escaped, cut at the width, at most
// streamLines a second with the rest counted.
func TestOutputStream(t *testing.T) {
	var out bytes.Buffer
	nonce := review.NewNonce()
	tw := review.NewTermWriter(&out, nonce, nil)
	now := time.Unix(1000, 0)
	s := &outputStream{w: tw, start: now, now: func() time.Time { return now }, width: 40}
	s.line(1, "hello\x1b[2J")
	s.line(2, strings.Repeat("x", 100))
	for range 5 {
		s.line(1, "more")
	}
	now = now.Add(2 * time.Second)
	s.line(1, "later\ttab")
	tw.Flush()
	want := "act: [0s] hello\\x1b[2J\n" +
		"act: [0s] " + strings.Repeat("x", 29) + "…\n" +
		"act: [0s] more\n" +
		"act: [0s] more\n" +
		"act: [2s] (3 lines not shown) later\\ttab\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
