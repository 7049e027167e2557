"""The record: the control directory (`control`), signing keys (`keys`), the ledger's bytes
(`ledger_format`), writing (`ledger`), verifying (`ledger_verify`), the rollback witness
(`witness`), telemetry (`telemetry`) and what the sealed steps back (`backing`). It stores,
chains, signs and verifies lines of plain data; it knows nothing of checks, workers, judges
or docks, and imports no other groundskeeper package but the foundation.
"""
