"""The supervisor: the LangGraph front door (`graph`), the author loop (`author`), the
runner that schedules a plan's tasks (`runner`, with its `phases`, `gating`, `verdicts` and
`tampering`), the pipeline of stages that judges each attempt (`pipeline`, `stages`), the
worker's model loop (`worker`), the plan file during a run (`plan_guard`) and the step
vocabulary it seals (`sealing`, `run_books`). It drives the rungs and the record; it must not
import the CLI.
"""
