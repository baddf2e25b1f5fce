package cmd

import (
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/policy"
)

func newPolicyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "policy",
		Usage:     "print the effective host policy and where it came from",
		UsageText: "act [--policy FILE] policy [--json]",
		Description: `Resolves the host policy — --policy FILE, else $ACT_POLICY, else
   <home>/policy.yaml, else the built-in default — validates it and prints it
   in the format it is read in: saved to a file, the output is a valid policy.
   Under a system policy (/etc/act/policy.yaml) it prints what is enforced, the
   stricter of both layers, each setting the system decided marked "system
   policy". The source goes to stderr (with --json, into the document, and
   data.sources names each setting's layer).

` + endsWith("success", 1, 2).note(1, "error (a policy file that is missing or invalid)").help(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("policy takes no arguments; give the file with --policy FILE")
			}
			res := &result{}
			pol, err := env.loadPolicy(res)
			if err != nil {
				return env.finish(res, "ok", err, nil)
			}
			if env.json {
				b, err := json.Marshal(pol)
				if err != nil {
					return env.finish(res, "ok", err, nil)
				}
				data := map[string]any{"policy": json.RawMessage(b)}
				if pol.System != nil {
					data["system"] = pol.System.File
					data["sources"] = pol.Sources
					if pol.System.StateDir != "" {
						data["state_dir"] = pol.System.StateDir
					}
					data["user_policy"] = pol.System.UserPolicy
				}
				res.Data = data
			}
			return env.finish(res, "ok", nil, func(w io.Writer, st styles) {
				w.Write(pol.Marshal())
				src := res.Policy.Source
				if res.Policy.File != "" {
					src += " " + res.Policy.File
				}
				io.WriteString(env.Stdio.Err, "act: policy from "+src+"\n")
				if pol.System != nil {
					io.WriteString(env.Stdio.Err, "act: bounded by the system policy "+pol.System.File+", which decided: "+sourcesList(pol.Sources)+"\n")
					if pol.UserApproversIgnored {
						io.WriteString(env.Stdio.Err, "act: the system policy asks for signed confirmations: the user policy's approvers and approvers_file are ignored\n")
					}
				}
			})
		},
	}
}

// sourcesList names the settings the system policy decided, sorted.
func sourcesList(src map[string]string) string {
	var names []string
	for k, layer := range src {
		if layer == policy.OriginSystem {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "nothing (the user's settings are all as strict)"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
