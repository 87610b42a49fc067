package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

// HealthStatus is a health check's verdict as Argo CD decodes it (gitops-engine's health.HealthStatus).
type HealthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// What Argo CD reports when a script returns a status it does not know.
const invalidHealthStatus = "Lua returned an invalid health status"

// Argo CD cancels a health script after one second.
const scriptTimeout = time.Second

var validHealthStatuses = map[string]bool{
	"Healthy": true, "Progressing": true, "Suspended": true, "Degraded": true, "Missing": true, "Unknown": true,
}

// The global Argo CD defines besides the libraries newArgoCDState opens. (It also defines a safe
// `os` with time and date only; this harness leaves it out, so a script that passes needs less.)
const objectGlobal = "obj"

// RunHealthScript runs a health check the way Argo CD's util/lua VM (runLua, ExecuteHealthLua)
// runs one from argocd-cm: lua.NewState with SkipOpenLibs, then only the package, base and table
// libraries, a one-second deadline, the object as the global `obj`, and the returned table
// encoded with gopher-json and decoded into a HealthStatus, an unknown status becoming Unknown.
func RunHealthScript(script string, obj map[string]any) (HealthStatus, error) {
	l, err := newArgoCDState()
	if err != nil {
		return HealthStatus{}, err
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal(objectGlobal, decodeValue(l, obj))
	if err := l.DoString(script); err != nil {
		return HealthStatus{}, err
	}
	returned := l.Get(-1)
	if returned.Type() != lua.LTTable {
		return HealthStatus{}, fmt.Errorf("expect table output from Lua script, not %s", returned.Type())
	}
	encoded, err := luajson.Encode(returned)
	if err != nil {
		return HealthStatus{}, err
	}
	var health HealthStatus
	if err := json.Unmarshal(encoded, &health); err != nil {
		return HealthStatus{}, err
	}
	if !validHealthStatuses[health.Status] {
		return HealthStatus{Status: "Unknown", Message: invalidHealthStatus}, nil
	}
	return health, nil
}

// newArgoCDState opens the libraries Argo CD opens for a check from argocd-cm (UseOpenLibs false):
// package, base and table.
func newArgoCDState() (*lua.LState, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name))
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("opening Lua library %q: %w", lib.name, err)
		}
	}
	return l, nil
}

// decodeValue turns an object into Lua values as Argo CD's util/lua decodeValue does.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case json.Number:
		return lua.LString(v)
	case []any:
		table := l.CreateTable(len(v), 0)
		for _, item := range v {
			table.Append(decodeValue(l, item))
		}
		return table
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return table
	}
	return lua.LNil
}

// UndefinedGlobals returns the globals a script reads that Argo CD does not define, such as
// `string` or `math`, found in its compiled code: a read in a branch that no fixture reaches
// shows too. Locals are not globals, so a script's own helpers do not count.
func UndefinedGlobals(script string) ([]string, error) {
	l, err := newArgoCDState()
	if err != nil {
		return nil, err
	}
	defer l.Close()
	compiled, err := l.LoadString(script)
	if err != nil {
		return nil, err
	}
	read := map[string]bool{}
	collectGlobalsRead(compiled.Proto, read)
	var undefined []string
	for name := range read {
		if l.GetGlobal(name) == lua.LNil && name != objectGlobal {
			undefined = append(undefined, name)
		}
	}
	slices.Sort(undefined)
	return undefined, nil
}

// collectGlobalsRead decodes GETGLOBAL instructions: gopher-lua keeps the opcode in the top 6
// bits of an instruction and the constant's index (the global's name) in the low 18 bits.
func collectGlobalsRead(proto *lua.FunctionProto, into map[string]bool) {
	for _, instruction := range proto.Code {
		if int(instruction>>26) != lua.OP_GETGLOBAL {
			continue
		}
		if name, ok := proto.Constants[instruction&0x3ffff].(lua.LString); ok {
			into[string(name)] = true
		}
	}
	for _, nested := range proto.FunctionPrototypes {
		collectGlobalsRead(nested, into)
	}
}
