package main

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

var _ = cel.Variable
var _ = environment.StoredExpressions
var _ = common.SchemaDeclType
var _ = openapi.Schema{}
var _ = spec.Schema{}
var _ = apiservercel.NewDeclTypeProvider

func main() { fmt.Println("ok") }
