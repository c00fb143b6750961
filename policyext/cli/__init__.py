"""The `policyext` command: validate, test and simulate policies, serve them, print the
scheduler's configuration.

One module per command (validate, simulate and pending, test, serve, config), each with
`register` and `run`; `command` assembles them into one parser. What they share: `flags`
(exit statuses, common flags), `inputs` (policies, pods, snapshots, the cluster), `output`
(problems, `-o` formats, report data), `tables` (the human-readable results) and `junit`
(JUnit XML for CI). The serve settings are checked in `policyext.settings`, shared with
the gunicorn wiring.
"""

from policyext.cli.command import main

__all__ = ["main"]
