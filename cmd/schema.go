package cmd

import (
	"encoding/json"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/act-project/act/internal/outcome"
	"github.com/act-project/act/schema"
)

func newSchemaCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "print the descriptor schema (CUE, or JSON Schema with --jsonschema)",
		UsageText: "act schema [--jsonschema | --output COMMAND]",
		Description: `Prints the CUE schema embedded in act, the one validate uses. With
   --jsonschema prints the same schema as JSON Schema (draft 2020-12), for
   agents that produce structured output. With --output COMMAND prints the
   JSON Schema of that command's --json output.

EXAMPLES:
   act schema
   act schema --jsonschema > descriptor.schema.json
   act schema --output plan

` + endsWith("success", 1, 2).help(),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "jsonschema", Usage: "print JSON Schema (draft 2020-12) instead of CUE"},
			&cli.StringFlag{Name: "output", Usage: "print the JSON Schema of this command's --json output"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usagef("schema takes no arguments")
			}
			res := &result{}
			if cmd := c.String("output"); cmd != "" {
				b, err := schema.OutputJSONSchema(cmd)
				if err != nil {
					return env.finish(res, outcome.OK.Status, usageError{err}, nil)
				}
				res.Data = json.RawMessage(b)
				return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, _ styles) { w.Write(append(b, '\n')) })
			}
			if c.Bool("jsonschema") {
				b, err := schema.JSONSchema()
				if err != nil {
					return env.finish(res, outcome.OK.Status, err, nil)
				}
				res.Data = json.RawMessage(b)
				return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, _ styles) { w.Write(b) })
			}
			src := schema.DescriptorSource()
			res.Data = src
			return env.finish(res, outcome.OK.Status, nil, func(w io.Writer, _ styles) { io.WriteString(w, src) })
		},
	}
}
