module policyext.io/bench/goextender

go 1.22
