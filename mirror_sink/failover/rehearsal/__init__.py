"""Rehearsal: proof that failover would work (verify, drills, readiness, audit, partial transactions)."""
