"""Rung 1, the plan: the org model (`org`), file keywords (`keywords`), the task tree and
its walking rules (`tree`), and lint (`lint`). It owns what a plan says and whether it
coheres before anything runs; it must not run checks, call models, seal the record or
import the supervisor or the CLI.
"""
