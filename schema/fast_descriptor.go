package schema

import "sync"

// descriptor.cue as shapes (fast.go). Each line follows the definition it
// is named after.

// descriptorCUESHA256 is the sha256 of the descriptor.cue these shapes
// were checked against (TestFastSchemaPinned).
const descriptorCUESHA256 = "952ab5b6a4ba7ed55516be3b680690384015a22607484fa4dfc86aa24f2a286f"

var fastDescriptor = sync.OnceValue(func() func(any) bool {
	var (
		uuid      = pattern(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
		timestamp = pattern(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)
		mode      = pattern(`^[0-7]{4}$`)
		sha256    = pattern(`^[0-9a-f]{64}$`)
		path      = str
		argv      = listOf(str, 1)
		riskLevel = oneOf("LOW", "MEDIUM", "HIGH", "CRITICAL")
		scope     = object{
			"filesystem": req(object{"paths": req(listOf(path, 0)), "recursive": req(boolean)}),
			"network":    opt(object{"required": opt(boolean)}),
			"ui":         opt(object{"required": opt(boolean)}),
		}
		resources = object{"max_cpu_ms": opt(integer), "max_memory_mb": opt(integer), "max_disk_mb": opt(integer), "max_duration_ms": opt(integer)}
		precond   = object{
			"paths_exist": opt(listOf(path, 0)), "network_available": opt(boolean), "user_idle": opt(boolean),
			"paths_absent": opt(listOf(path, 0)), "sha256": opt(mapOf(sha256)), "min_free_disk_mb": opt(integer),
		}
		effects = object{
			"filesystem":          req(object{"create": req(listOf(path, 0)), "modify": req(listOf(path, 0)), "delete": req(listOf(path, 0))}),
			"network":             req(boolean),
			"system_state_change": req(boolean),
		}
		sandbox      = object{"required": opt(boolean), "sandbox_type": opt(oneOf("container")), "allow_network": opt(boolean), "max_runs": opt(integer)}
		rollback     = object{"supported": opt(boolean), "rollback_type": opt(oneOf("filesystem_snapshot")), "rollback_scope": opt(oneOf("declared_effects_only", "full_scope"))}
		confirmation = object{"required": opt(boolean), "reason": opt(str), "cooldown_on_repeat": opt(boolean)}
		audit        = object{"log": opt(boolean), "log_level": opt(oneOf("SUMMARY", "DETAILED", "FORENSIC")), "retain_days": opt(integer)}
		verification = object{"commands": req(listOf(argv, 0)), "env": opt(mapOf(str)), "workdir": opt(path)}
		edit         = object{"old": req(text), "new": req(str), "replace_all": opt(boolean)}
		fileWrite    = object{
			"path": req(path), "content": opt(str), "content_base64": opt(str), "edits": opt(listOf(edit, 1)),
			"mode": opt(mode), "create_only": opt(boolean),
		}
		pkg = object{"manager": req(oneOf("npm", "pip", "go")), "packages": req(listOf(str, 1)), "workdir": req(path), "dev": opt(boolean)}
		// the key of set is any string, its value anything; unset a list of strings
		configChange = object{"path": req(path), "format": req(oneOf("json", "yaml")), "set": opt(mapOf(anyValue)), "unset": opt(listOf(str, 0))}
	)
	ops := map[string]shape{
		"FILE_READ":         object{"path": req(path)},
		"FILE_WRITE":        both(fileWrite, func(m map[string]any) bool { return exactlyOne(m, "content", "content_base64", "edits") }),
		"FILE_DELETE":       object{"paths": req(listOf(path, 1))},
		"FILE_MOVE":         object{"from": req(path), "to": req(path), "overwrite": opt(boolean)},
		"DIRECTORY_CREATE":  object{"path": req(path), "parents": opt(boolean), "mode": opt(mode)},
		"DIRECTORY_DELETE":  object{"path": req(path)},
		"COMMAND_EXECUTION": object{"argv": req(argv), "workdir": req(path), "env": opt(mapOf(str)), "stdin": opt(str), "report_cwd": opt(boolean)},
		"PACKAGE_INSTALL":   pkg,
		"PACKAGE_REMOVE":    pkg,
		"NETWORK_REQUEST":   object{"method": req(oneOf("GET", "HEAD")), "url": req(text), "headers": opt(mapOf(str)), "save_to": opt(path)},
		"UI_AUTOMATION":     mapOf(anyValue),
		"CONFIG_CHANGE":     both(configChange, func(m map[string]any) bool { return atLeastOne(m, "set", "unset") }),
	}
	base := object{
		"descriptor_version": opt(oneOf("1.0")),
		"action_id":          opt(uuid),
		"created_at":         opt(timestamp),
		"created_by":         opt(oneOf("ai")),
		"intent_summary":     req(text),
		"action_type":        req(str), // which one: body
		"risk_level":         opt(riskLevel),
		"scope":              opt(scope),
		"resources":          opt(resources),
		"preconditions":      opt(precond),
		"effects":            opt(effects),
		"sandbox":            opt(sandbox),
		"rollback":           opt(rollback),
		"confirmation":       opt(confirmation),
		"audit":              opt(audit),
		"verification":       opt(verification),
	}
	stepBase := object{
		"action_type":    req(str),
		"intent_summary": opt(text),
		"risk_level":     opt(riskLevel),
		"effects":        opt(effects),
	}
	// withBody is #Base (or #StepBase) & #Body[action_type]: operation
	// for every type but MULTI_STEP_COMPOSITE, whose steps are #Step.
	var step shape
	withBody := func(fields object) shape {
		return shapeFunc(func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok {
				return false
			}
			t, _ := m["action_type"].(string)
			if t == composite {
				return fields.fieldsHold(m, object{"steps": req(listOf(step, 1))})
			}
			op, ok := ops[t]
			return ok && fields.fieldsHold(m, object{"operation": req(op)})
		})
	}
	step = withBody(stepBase)
	return withBody(base).holds
})
