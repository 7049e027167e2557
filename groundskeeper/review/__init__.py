"""Reviewing a run after the fact: the report page, its JSON document and the exports other
tools check (in-toto statements in DSSE envelopes, OTLP JSON spans).

It owns reading a ledger for a reviewer — verified by `record.ledger_verify` while it is read,
every worker-written string treated as hostile — and the shapes it writes. It does not write
the ledger, run anything, or print (the CLI's `report` command does).
"""
