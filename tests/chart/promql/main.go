// Parses each line of stdin as a PromQL expression with the Prometheus parser itself:
// the chart tests check the PrometheusRule's alerts with it (tests/chart/promqlbin.py).
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	p := parser.NewParser(parser.Options{})
	failed := false
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" {
			continue
		}
		if _, err := p.ParseExpr(line); err != nil {
			fmt.Printf("FAIL %s\n  %v\n", line, err)
			failed = true
		} else {
			fmt.Printf("ok   %s\n", line)
		}
	}
	if failed {
		os.Exit(1)
	}
}
