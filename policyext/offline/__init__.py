"""The offline tools: what the commands and the benchmarks run beside the engine, and the
server never does (an import-linter contract keeps it out of the serving process).

`scheduler/` emulates kube-scheduler's default plugins and its decision with the policies
as its extender; `testing` runs PolicyTest cases; `whatif` compares two rule sets for the
pending pods; `workloads` finds the pod a Pod, a workload or a List stands for; `explain`
renders a scheduler's Decision as plain data. Each reads the policies through the engine's
facade (`policyext.policy`), as any caller outside it does.
"""
