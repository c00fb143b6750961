// Command k8scel type-checks and evaluates CEL expressions the way Kubernetes does: with
// cel-go and the CEL environment of k8s.io/apiserver (the release in go.mod), `pod` and
// `node` typed from the v1 Pod and Node schemas of Kubernetes' published OpenAPI
// description, as ValidatingAdmissionPolicy types its objects.
//
// Usage: k8scel SWAGGER_JSON < cases.jsonl > results.jsonl
//
// Each input line is {"expr": "...", "pod": {...}, "node": {...}}; each output line says
// whether the expression compiled ("compiled", else "error"), its static "type", and its
// "value" (as JSON, with "kind" its CEL type), its evaluation "eval_error", or the
// "program_error" of a program that could not be built from it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"k8s.io/apimachinery/pkg/util/version"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

type input struct {
	Expr string         `json:"expr"`
	Pod  map[string]any `json:"pod"`
	Node map[string]any `json:"node"`
}

type output struct {
	Compiled  bool   `json:"compiled"`
	Error     string `json:"error,omitempty"`
	Type      string `json:"type,omitempty"`
	Value     any    `json:"value,omitempty"`
	Kind      string `json:"kind,omitempty"`
	EvalError string `json:"eval_error,omitempty"`
	// the program could not be built from the checked expression (a constant argument
	// that can never convert, such as `duration('1d')`): refused before any evaluation
	ProgramError string `json:"program_error,omitempty"`
}

type object struct {
	name   string
	schema *spec.Schema
	decl   *apiservercel.DeclType
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: k8scel SWAGGER_JSON < cases.jsonl")
		os.Exit(2)
	}
	definitions, err := readDefinitions(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pod := resolve(definitions, "io.k8s.api.core.v1.Pod", "Pod")
	node := resolve(definitions, "io.k8s.api.core.v1.Node", "Node")
	env, err := environment.MustBaseEnvSet(version.MajorMinor(1, 37)).Extend(
		environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions: []cel.EnvOption{
				cel.Variable("pod", pod.decl.CelType()),
				cel.Variable("node", node.decl.CelType()),
			},
			DeclTypes: []*apiservercel.DeclType{pod.decl, node.decl},
		},
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	celEnv, err := env.Env(environment.NewExpressions)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		decoder := json.NewDecoder(bytes.NewReader(in.Bytes()))
		decoder.UseNumber() // integers stay integers, as the API server decodes them
		if err := decoder.Decode(&c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		c.Pod = numbers(c.Pod).(map[string]any)
		c.Node = numbers(c.Node).(map[string]any)
		if err := out.Encode(run(celEnv, c, pod, node)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func readDefinitions(path string) (map[string]*spec.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var swagger spec.Swagger
	if err := json.Unmarshal(data, &swagger); err != nil {
		return nil, err
	}
	out := make(map[string]*spec.Schema, len(swagger.Definitions))
	for name, def := range swagger.Definitions {
		d := def
		out["#/definitions/"+name] = &d
	}
	return out, nil
}

// resolve gives a definition its CEL type as ValidatingAdmissionPolicy does: references
// populated, then the schema converted by SchemaDeclType.
func resolve(definitions map[string]*spec.Schema, name, typeName string) object {
	s, err := resolver.PopulateRefs(func(ref string) (*spec.Schema, bool) {
		d, ok := definitions[ref]
		return d, ok
	}, "#/definitions/"+name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	decl := common.SchemaDeclType(&openapi.Schema{Schema: s}, true).MaybeAssignTypeName(typeName)
	return object{name: typeName, schema: s, decl: decl}
}

func run(env *cel.Env, c input, pod, node object) output {
	ast, issues := env.Compile(c.Expr)
	if issues != nil && issues.Err() != nil {
		return output{Error: issues.Err().Error()}
	}
	result := output{Compiled: true, Type: cel.FormatCELType(ast.OutputType())}
	program, err := env.Program(ast, cel.CostLimit(1_000_000))
	if err != nil {
		result.ProgramError = err.Error()
		return result
	}
	activation := map[string]any{
		"pod":  common.UnstructuredToVal(orEmpty(c.Pod), &openapi.Schema{Schema: pod.schema}),
		"node": common.UnstructuredToVal(orEmpty(c.Node), &openapi.Schema{Schema: node.schema}),
	}
	value, _, err := program.Eval(activation)
	if err != nil {
		result.EvalError = err.Error()
		return result
	}
	result.Kind = value.Type().(ref.Type).TypeName()
	result.Value = toJSON(value)
	return result
}

// numbers turns the decoder's json.Number into int64 (or float64 when not integral).
func numbers(v any) any {
	switch x := v.(type) {
	case nil:
		return map[string]any{}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			if e == nil {
				x[k] = nil
				continue
			}
			x[k] = numbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
		return x
	}
	return v
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// toJSON renders a value as JSON where it has a JSON form, and as its string form (or the
// CEL type's conversion to string) otherwise: timestamps, durations, library types.
func toJSON(v ref.Val) any {
	switch v.Type() {
	case types.TimestampType, types.DurationType:
		return v.ConvertToType(types.StringType).Value()
	case types.BytesType:
		return map[string]any{"bytes": fmt.Sprintf("%x", v.Value())}
	case types.UintType:
		return map[string]any{"uint": fmt.Sprint(v.Value())}
	case types.DoubleType:
		f := v.Value().(float64)
		if f != f || f > 1.7976931348623157e308 || f < -1.7976931348623157e308 {
			return map[string]any{"double": fmt.Sprint(f)}
		}
		return map[string]any{"double": f}
	case types.OptionalType:
		opt := v.(*types.Optional)
		if !opt.HasValue() {
			return map[string]any{"optional": nil}
		}
		return map[string]any{"optional": []any{toJSON(opt.GetValue())}}
	}
	if lister, ok := v.(traits.Lister); ok {
		out := []any{}
		it := lister.Iterator()
		for it.HasNext() == types.True {
			out = append(out, toJSON(it.Next()))
		}
		return out
	}
	if mapper, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		it := mapper.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			out[fmt.Sprint(k.Value())] = toJSON(mapper.Get(k))
		}
		return out
	}
	native, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{}))
	if err == nil {
		data, err := protojson.Marshal(native.(*structpb.Value))
		if err == nil {
			var out any
			if json.Unmarshal(data, &out) == nil {
				return out
			}
		}
	}
	if s := v.ConvertToType(types.StringType); !types.IsError(s) {
		return map[string]any{"string_of": s.Value()}
	}
	return map[string]any{"unrenderable": strings.TrimSpace(fmt.Sprint(v.Value()))}
}
