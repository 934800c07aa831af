"""Rollout rules: what decides who gets a flag, on the reference server's admin paths (Unleash
8.2.0): strategy types (``/api/admin/strategies``), a flag environment's strategies with their
constraints, segments and variants, segments (``/api/admin/segments``), a flag's variants per
environment (``variants-batch``) and its dependency on a parent flag. Each change is validated as
the reference validates it and recorded with its event (spec 2.3, 6) in one transaction."""
