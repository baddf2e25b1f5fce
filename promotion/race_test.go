//go:build race

package promotion

func init() { raceEnabled = true }
