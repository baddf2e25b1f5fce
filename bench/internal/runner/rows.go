package main

// rows is the table of PERF.md's "The benchmarks bench/ reports". To add a
// row, append an entry: setup builds what the row needs (b.act(),
// b.hello(), data in b.work) and returns its A and B sides, usually
// b.command(argv...); a side can also be any func timing one run itself.
var rows = []row{
	{num: "1", name: "start", target: 4.0, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "--version"), b.command(b.hello())
	}},
	{num: "2", name: "validate", target: 1.5, rssMiB: 32, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "validate", b.example("file_write.yaml")), b.command(b.act(), "--version")
	}},
	{num: "2b", name: "validate-composite", target: 1.8, rssMiB: 32, setup: func(b *bench) (side, side) {
		return b.command(b.act(), "validate", b.example("composite.yaml")), b.command(b.act(), "--version")
	}},
}
