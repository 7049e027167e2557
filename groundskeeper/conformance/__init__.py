"""Rung 3, conformance: does a WebAssembly component fit the `groundskeeper:engine` world,
may it replace the docked one (`rules`), and the engine that runs docked components
(`engine`). It must not import the acceptance stages, the supervisor or the CLI.
"""
