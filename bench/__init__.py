"""The benchmark: a policyext extender against a hand-written Go extender.

`python -m bench` builds the Go baseline, generates the workload (`bench.workload`), times
filter and prioritize over a keep-alive HTTP connection for every target
(`bench.targets`, `bench.http_client`), times single CEL evaluations (`bench.celpy_eval`),
and writes `docs/benchmarks.md` and `bench/results/*.json` (`bench.report`).
"""
