package mcpserver

// guide is act_schema's short guide to writing a descriptor act
// accepts (docs/mcp.md; the rule ids are docs/rules.md's).
const guide = `# Writing an action descriptor

A descriptor is one JSON object (or YAML) saying what to do, where, with what
limits, what it will change and how to undo it. Every field the schema
requires must be there; no other field is allowed.

Write the short form: leave out descriptor_version, created_by,
sandbox.sandbox_type and rollback.rollback_type (each has one allowed value),
action_id and created_at (act stamps a fresh UUID and the time now), and, for
a file operation (FILE_*, DIRECTORY_*, CONFIG_CHANGE, NETWORK_REQUEST and
composites of them), effects: act derives them from the operation. act fills
all that in before checking; the answer's action_id is the one it gave.

## The fields
- intent_summary: one sentence saying what and why.
- action_type: FILE_READ, FILE_WRITE, FILE_DELETE, FILE_MOVE, DIRECTORY_CREATE,
  DIRECTORY_DELETE, CONFIG_CHANGE, COMMAND_EXECUTION, PACKAGE_INSTALL,
  PACKAGE_REMOVE, NETWORK_REQUEST, UI_AUTOMATION or MULTI_STEP_COMPOSITE
  (steps[] instead of operation).
- risk_level: LOW, MEDIUM, HIGH or CRITICAL. act assesses the risk itself too
  (running a command is at least MEDIUM) and the stricter one counts.
- scope.filesystem.paths: the absolute directories the action may touch;
  scope.network and scope.ui: {required: false} unless needed.
- resources: max_cpu_ms, max_memory_mb, max_disk_mb, max_duration_ms. For a
  command, size them for what it runs: a test suite needs minutes and GiBs
  (300000, 2048, 1024, 300000); what it writes in the caches and the home
  (thrown away) counts against max_disk_mb.
- preconditions: paths_exist, network_available, user_idle (and optionally
  paths_absent, min_free_disk_mb); checked on the real machine.
- effects.filesystem: create, modify, delete — every path the action changes
  (globs allowed). A change not declared here rejects the plan. Required for
  COMMAND_EXECUTION and PACKAGE_*; derived for file operations when left out.
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
  "risk_level": "LOW",
  "scope": {"filesystem": {"paths": ["/tmp/project"], "recursive": false},
            "network": {"required": false}, "ui": {"required": false}},
  "resources": {"max_cpu_ms": 1000, "max_memory_mb": 64, "max_disk_mb": 1, "max_duration_ms": 2000},
  "preconditions": {"paths_exist": ["/tmp/project"], "network_available": false, "user_idle": false},
  "sandbox": {"required": false, "allow_network": false, "max_runs": 1},
  "rollback": {"supported": true, "rollback_scope": "declared_effects_only"},
  "confirmation": {"required": false, "reason": "", "cooldown_on_repeat": false},
  "audit": {"log": true, "log_level": "SUMMARY", "retain_days": 30},
  "operation": {"path": "/tmp/project/NOTES.md", "content": "# Notes\n", "mode": "0644"}
}

## After act_plan
act_apply promotes the plan when the host's policy allows it now without a
person. Otherwise the answer is "queued": tell the user the plan id and the
reason; they run "act apply PLAN_ID --confirm". You cannot confirm.
`
