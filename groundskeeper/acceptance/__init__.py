"""Rung 2, acceptance: is DONE earned? The check in the sandbox (`check`), protected inputs,
contracts, evidence, the judge, gates, invariants, fix loops, script validation, the worker's
tools and what the attempt record shows. Each stage judges plain inputs and returns a result;
it must not seal the ledger, schedule tasks or import the supervisor or the CLI.
"""
