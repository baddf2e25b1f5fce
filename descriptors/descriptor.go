// Package descriptors holds the Action Descriptor: its Go types, strict
// loading (parse, CUE schema, typed decode) and the static rules of docs/rules.md.
//
// Nothing here touches the filesystem beyond what the caller passes in:
// [Load] takes bytes, [Check] takes a [CheckOptions] describing the host.
package descriptors

import "encoding/json"

// ActionType is the descriptor's action_type.
type ActionType string

// The action types of docs/descriptor.md.
const (
	FileRead           ActionType = "FILE_READ"
	FileWrite          ActionType = "FILE_WRITE"
	FileDelete         ActionType = "FILE_DELETE"
	FileMove           ActionType = "FILE_MOVE"
	DirectoryCreate    ActionType = "DIRECTORY_CREATE"
	DirectoryDelete    ActionType = "DIRECTORY_DELETE"
	CommandExecution   ActionType = "COMMAND_EXECUTION"
	PackageInstall     ActionType = "PACKAGE_INSTALL"
	PackageRemove      ActionType = "PACKAGE_REMOVE"
	NetworkRequest     ActionType = "NETWORK_REQUEST"
	UIAutomation       ActionType = "UI_AUTOMATION"
	ConfigChange       ActionType = "CONFIG_CHANGE"
	MultiStepComposite ActionType = "MULTI_STEP_COMPOSITE"
)

// ActionTypes lists every action type in the seed's order.
var ActionTypes = []ActionType{
	FileRead, FileWrite, FileDelete, FileMove, DirectoryCreate, DirectoryDelete,
	CommandExecution, PackageInstall, PackageRemove, NetworkRequest, UIAutomation,
	ConfigChange, MultiStepComposite,
}

// RiskLevel is the descriptor's risk_level.
type RiskLevel string

// The risk levels, lowest first.
const (
	RiskLow      RiskLevel = "LOW"
	RiskMedium   RiskLevel = "MEDIUM"
	RiskHigh     RiskLevel = "HIGH"
	RiskCritical RiskLevel = "CRITICAL"
)

// RiskLevels lists the risk levels, lowest first.
var RiskLevels = []RiskLevel{RiskLow, RiskMedium, RiskHigh, RiskCritical}

// Rank orders risk levels: LOW 0 … CRITICAL 3, unknown -1.
func (r RiskLevel) Rank() int {
	for i, l := range RiskLevels {
		if l == r {
			return i
		}
	}
	return -1
}

// A Descriptor is a parsed, schema-valid Action Descriptor (docs/descriptor.md
// and the extensions of docs/descriptor.md).
type Descriptor struct {
	DescriptorVersion string        `json:"descriptor_version"`
	ActionID          string        `json:"action_id"`
	CreatedAt         string        `json:"created_at"`
	CreatedBy         string        `json:"created_by"`
	IntentSummary     string        `json:"intent_summary"`
	ActionType        ActionType    `json:"action_type"`
	RiskLevel         RiskLevel     `json:"risk_level"`
	Scope             Scope         `json:"scope"`
	Resources         Resources     `json:"resources"`
	Preconditions     Preconditions `json:"preconditions"`
	Effects           Effects       `json:"effects"`
	Sandbox           Sandbox       `json:"sandbox"`
	Rollback          Rollback      `json:"rollback"`
	Confirmation      Confirmation  `json:"confirmation"`
	Audit             Audit         `json:"audit"`
	Verification      *Verification `json:"verification,omitempty"`

	// Operation is the raw operation object; Op is its typed form.
	Operation json.RawMessage `json:"operation,omitempty"`
	Steps     []Step          `json:"steps,omitempty"`

	// Op is the typed operation, decoded by action_type. Nil for
	// MULTI_STEP_COMPOSITE.
	Op Operation `json:"-"`
}

// A Step is one child action of a MULTI_STEP_COMPOSITE. It inherits scope,
// resources, sandbox and rollback from its parent.
type Step struct {
	ActionType    ActionType      `json:"action_type"`
	IntentSummary string          `json:"intent_summary,omitempty"`
	RiskLevel     RiskLevel       `json:"risk_level,omitempty"`
	Effects       Effects         `json:"effects"`
	Operation     json.RawMessage `json:"operation,omitempty"`
	Steps         []Step          `json:"steps,omitempty"`

	Op Operation `json:"-"`
}

// Scope is where the action applies (docs/descriptor.md).
type Scope struct {
	Filesystem FilesystemScope `json:"filesystem"`
	Network    Required        `json:"network"`
	UI         Required        `json:"ui"`
}

// FilesystemScope lists the absolute paths an action may touch.
type FilesystemScope struct {
	Paths     []string `json:"paths"`
	Recursive bool     `json:"recursive"`
}

// Required is the {required: bool} shape of scope.network and scope.ui.
type Required struct {
	Required bool `json:"required"`
}

// Resources are the hard caps of docs/descriptor.md.
type Resources struct {
	MaxCPUMs      int64 `json:"max_cpu_ms"`
	MaxMemoryMB   int64 `json:"max_memory_mb"`
	MaxDiskMB     int64 `json:"max_disk_mb"`
	MaxDurationMs int64 `json:"max_duration_ms"`
}

// Preconditions must hold on the real machine before a plan (docs/descriptor.md and
// docs/descriptor.md).
type Preconditions struct {
	PathsExist       []string          `json:"paths_exist"`
	NetworkAvailable bool              `json:"network_available"`
	UserIdle         bool              `json:"user_idle"`
	PathsAbsent      []string          `json:"paths_absent,omitempty"`
	SHA256           map[string]string `json:"sha256,omitempty"`
	MinFreeDiskMB    *int64            `json:"min_free_disk_mb,omitempty"`
}

// Effects is what the action claims it will change (docs/descriptor.md).
type Effects struct {
	Filesystem        FilesystemEffects `json:"filesystem"`
	Network           bool              `json:"network"`
	SystemStateChange bool              `json:"system_state_change"`
}

// FilesystemEffects are absolute paths or globs by kind of change.
type FilesystemEffects struct {
	Create []string `json:"create"`
	Modify []string `json:"modify"`
	Delete []string `json:"delete"`
}

// Sandbox declares the sandbox behaviour (docs/descriptor.md).
type Sandbox struct {
	Required     bool   `json:"required"`
	SandboxType  string `json:"sandbox_type"`
	AllowNetwork bool   `json:"allow_network"`
	MaxRuns      int64  `json:"max_runs"`
}

// Rollback declares rollback semantics (docs/descriptor.md).
type Rollback struct {
	Supported     bool   `json:"supported"`
	RollbackType  string `json:"rollback_type"`
	RollbackScope string `json:"rollback_scope"`
}

// Confirmation declares the confirmation requirements (docs/descriptor.md).
type Confirmation struct {
	Required         bool   `json:"required"`
	Reason           string `json:"reason"`
	CooldownOnRepeat bool   `json:"cooldown_on_repeat"`
}

// Audit is the agent's logging request (docs/descriptor.md). Retention is the
// host's: RetainDays is recorded, never obeyed.
type Audit struct {
	Log        bool   `json:"log"`
	LogLevel   string `json:"log_level"`
	RetainDays int64  `json:"retain_days"`
}

// Verification lists commands run in the sandbox after the operation.
type Verification struct {
	Commands [][]string `json:"commands"`
	// Env and Workdir are every command's, as a COMMAND_EXECUTION's
	// (Workdir "": the first scope path).
	Env     map[string]string `json:"env,omitempty"`
	Workdir string            `json:"workdir,omitempty"`
}
