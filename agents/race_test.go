//go:build race

package agents

func init() { raceEnabled = true }
