package mcpserver

// guide is act_schema's short guide to writing a descriptor act
// accepts (docs/mcp.md; the rule ids are docs/rules.md's).
const guide = `# Writing an action descriptor

A descriptor is one JSON object (or YAML) saying what to do, where, with what
limits, what it will change and how to undo it. No field the schema does not
list is allowed.

Write the short form: intent_summary, action_type and operation (steps for a
composite) are all act needs. Everything else may be left out, and act fills
it in before checking, from the operation and the host policy: the scope (a
file's directory, a command's workdir), the effects (what a file operation
names; everything below a command's workdir), the resources (within the
policy's caps), no preconditions, the sandbox the rules require, rollback,
no confirmation asked for, audit; action_id and created_at too (the answer's
action_id is the one it gave). Write a field only to say something else: an
object you write in part is completed field by field, but effects and
scope.filesystem are taken whole, never widened.

## The fields
- intent_summary: one sentence saying what and why.
- action_type: FILE_READ, FILE_WRITE, FILE_DELETE, FILE_MOVE, DIRECTORY_CREATE,
  DIRECTORY_DELETE, CONFIG_CHANGE, COMMAND_EXECUTION, PACKAGE_INSTALL,
  PACKAGE_REMOVE, NETWORK_REQUEST, UI_AUTOMATION or MULTI_STEP_COMPOSITE
  (steps[] instead of operation).
- risk_level: LOW, MEDIUM, HIGH or CRITICAL. act assesses the risk itself too
  (running a command is at least MEDIUM) and the stricter one counts.
- scope.filesystem.paths: the absolute directories the action may touch
  (recursive: true for all below them); scope.network and scope.ui:
  {required: false} unless needed.
- resources: max_cpu_ms, max_memory_mb, max_disk_mb, max_duration_ms. For a
  command, size them for what it runs: a test suite needs minutes and GiBs
  (300000, 2048, 1024, 300000); what it writes in the caches and the home
  (thrown away) counts against max_disk_mb.
- preconditions: paths_exist, network_available, user_idle (and optionally
  paths_absent, min_free_disk_mb); checked on the real machine.
- effects.filesystem: create, modify, delete — every path the action changes
  (globs allowed). A change not declared here rejects the plan. Left out:
  what a file operation names, or everything below a command's workdir.
- sandbox: required, allow_network, max_runs (how often this action id's
  commands may run); rollback: supported, rollback_scope; confirmation;
  audit: see the example below.
- operation: the action itself, shaped by action_type.

## What makes act refuse a descriptor
- invalid (status invalid): a parse or schema error, a relative or unclean
  path, a path outside the scope, an effect outside the scope, a scope that
  reaches act's state directory, a host system directory or a whole home
  directory, a write to a file that runs code later (shell rc, cron, ...).
- blocked (status blocked): the host policy denies the action type or risk,
  a path outside the policy's allowed roots, a cap above the policy's, a stale
  created_at, UI_AUTOMATION.
- at plan time: a precondition that fails (status failed), an undeclared
  change, a command that fails or exceeds a cap (status rejected).
Every problem names its rule id, field, line and column: fix that field.

## Operations, by action type
- FILE_WRITE: {path: /abs/file, content: "text\n", mode: "0644"}, or, to change
  part of a file that exists: {path: /abs/file, edits: [{old: "port = 80", new:
  "port = 8080"}]} (each old must occur exactly once, unless replace_all: true;
  else op.edit-not-found or op.edit-ambiguous)
- FILE_READ: {path: /abs/file} (act_apply returns the file in content)
- FILE_DELETE: {paths: ["/abs/dir/*.log"]}
- FILE_MOVE: {from: /abs/a, to: /abs/b, overwrite: false}
- DIRECTORY_CREATE: {path: /abs/dir, parents: false, mode: "0755"}
- DIRECTORY_DELETE: {path: /abs/dir}
- CONFIG_CHANGE: {path: /abs/config.json, format: json, set: {"server.port": 8080}, unset: ["debug"]}
- COMMAND_EXECUTION: {argv: [tar, -czf, /abs/out.tgz, -C, /abs/src, .], workdir: /abs/src, env: {TZ: UTC}}
  (runs in a sandbox with no network, not even IPv4/IPv6 on localhost unless the
  host policy allows its sandbox loopback; optional verification.commands: [[argv...]])
- PACKAGE_INSTALL / PACKAGE_REMOVE: {manager: npm, packages: [left-pad@1.3.0], workdir: /abs/app}
- NETWORK_REQUEST: {method: GET, url: https://host/path, headers: {}, save_to: /abs/file}
- MULTI_STEP_COMPOSITE: steps: [{action_type, operation, and optionally
  intent_summary, risk_level, effects}, ...], run in order, all or nothing.

## A whole FILE_WRITE descriptor, in the short form
{
  "intent_summary": "Write a NOTES.md file explaining how to run the tests.",
  "action_type": "FILE_WRITE",
  "operation": {"path": "/tmp/project/NOTES.md", "content": "# Notes\n"}
}

## A command, in the short form
{
  "intent_summary": "Run the project's tests.",
  "action_type": "COMMAND_EXECUTION",
  "operation": {"argv": ["go", "test", "./..."], "workdir": "/tmp/project"}
}

## After act_plan
act_apply promotes the plan when the host's policy allows it now without a
person. Otherwise the answer is "queued": tell the user the plan id and the
reason; they run "act apply PLAN_ID --confirm". You cannot confirm.
`
