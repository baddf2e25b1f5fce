package schema

import "sync"

// policy.cue as shapes (fast.go). Each line follows the field it is named
// after.

// policyCUESHA256 is the sha256 of the policy.cue these shapes were
// checked against (TestFastSchemaPinned).
const policyCUESHA256 = "380717a000d0f09faa4acd15bcec588ade6c6331a870064021cd82ccabec994a"

// intAtLeast is int & >=min.
func intAtLeast(min int64) shape {
	return shapeFunc(func(v any) bool {
		switch n := v.(type) {
		case int64:
			return n >= min
		case int:
			return int64(n) >= min
		}
		return false
	})
}

var fastPolicy = sync.OnceValue(func() func(any) bool {
	var (
		mode     = oneOf("allow", "confirm", "deny")
		typeMode = eitherOf(mode, object{"LOW": opt(mode), "MEDIUM": opt(mode), "HIGH": opt(mode), "CRITICAL": opt(mode)})
		capInt   = intAtLeast(1)
		root     = pattern(`^(/|~$|~/)`)
		host     = pattern(`^(\*\.)?[A-Za-z0-9:]([A-Za-z0-9.:-]*[A-Za-z0-9])?(/[0-9]{1,3})?$`)
		duration = pattern(`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`)
		types    = object{}
	)
	for _, t := range []string{"FILE_READ", "FILE_WRITE", "FILE_DELETE", "FILE_MOVE", "DIRECTORY_CREATE", "DIRECTORY_DELETE",
		"COMMAND_EXECUTION", "PACKAGE_INSTALL", "PACKAGE_REMOVE", "NETWORK_REQUEST", "UI_AUTOMATION", "CONFIG_CHANGE", "MULTI_STEP_COMPOSITE"} {
		types[t] = opt(typeMode)
	}
	policy := object{
		"allowed_roots": opt(listOf(root, 0)),
		"workspaces":    opt(listOf(root, 0)),
		"resource_caps": opt(object{"max_cpu_ms": opt(capInt), "max_memory_mb": opt(capInt), "max_disk_mb": opt(capInt), "max_duration_ms": opt(capInt)}),
		"resources":     opt(object{"memory_enforcement": opt(oneOf("total", "per_process"))}),
		"modes": opt(object{
			"risk":  opt(object{"LOW": opt(mode), "MEDIUM": opt(mode), "HIGH": opt(mode), "CRITICAL": opt(mode)}),
			"types": opt(types),
		}),
		"network":     opt(object{"allowed_hosts": opt(listOf(host, 0)), "sandbox_network": opt(boolean), "credential_hosts": opt(listOf(host, 0))}),
		"cooldown":    opt(duration),
		"plan_expiry": opt(duration),
		"idle_period": opt(duration),
		"audit": opt(object{
			"retain_days": opt(intAtLeast(1)),
			"witnesses": opt(listOf(object{
				"name": req(pattern(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)),
				"key":  req(str),
				"url":  req(pattern(`^https?://`)),
			}, 0)),
			"quorum":        opt(intAtLeast(0)),
			"witness_grace": opt(duration),
			"witness_after": opt(boolean),
		}),
		"confirmation":  opt(object{"via": opt(oneOf("flag", "terminal", "signed")), "approvers": opt(listOf(str, 0)), "approvers_file": opt(root)}),
		"hooks":         opt(object{"cannot_dry_run": opt(oneOf("ask", "deny"))}),
		"max_changes":   opt(intAtLeast(1)),
		"max_pending":   opt(intAtLeast(1)),
		"max_layers_mb": opt(intAtLeast(1)),
		"command_rules": opt(listOf(object{
			"argv":  req(listOf(str, 1)),
			"env":   opt(mapOf(str)),
			"stdin": opt(oneOf("any")),
			"mode":  req(mode),
		}, 0)),
		"risk":        opt(object{"max_deletes": opt(intAtLeast(1)), "sensitive_paths": opt(listOf(root, 0)), "commands": opt(oneOf("by_diff", "always_medium"))}),
		"redact":      opt(object{"pii": opt(boolean)}),
		"state_dir":   opt(root),
		"user_policy": opt(boolean),
		"sandbox": opt(object{
			"hide_paths":           opt(listOf(root, 0)),
			"home_visible":         opt(listOf(root, 0)),
			"caches":               opt(listOf(root, 0)),
			"persistent_caches":    opt(listOf(allOf(root, pattern(`/pkg/mod/?$`)), 0)),
			"persistent_caches_mb": opt(intAtLeast(0)),
			"loopback":             opt(boolean),
		}),
	}
	return policy.holds
})
