package cmd

import (
	"os/exec"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/gate"
)

// removeLater is the gate's RemoveLater (gate.Gate): act __remove-layer
// DIR, started from act's own executable in a session of its own, with
// nothing open but /dev/null, not waited for by a one-shot act. nil
// where Env.Self is "".
func (env *Env) removeLater() func(dir string) bool {
	if env.Self == "" {
		return nil
	}
	return func(dir string) bool {
		c := &exec.Cmd{
			Path:        env.Self,
			Args:        []string{"act", removeLayerCommand, dir},
			Dir:         "/",
			Env:         []string{},
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}
		if err := c.Start(); err != nil {
			return false
		}
		go c.Wait() // a long-running act (act mcp) reaps it
		return true
	}
}

const removeLayerCommand = "__remove-layer"

// newRemoveLayerCommand is the hidden command that removes a layer act
// renamed out of an applied plan, after the act that applied it returned
// (Env.removeLater, gate.RemoveDroppedLayer). It says nothing and exits
// 0: what it leaves, act gc removes.
func newRemoveLayerCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:   removeLayerCommand,
		Hidden: true,
		Action: func(c *cli.Context) error {
			if c.NArg() == 1 {
				gate.RemoveDroppedLayer(c.Args().First())
			}
			return nil
		},
	}
}
