"""The aggregated configuration model: servers grouped into classes, a
pattern (a multiset of job options one server of a class holds) per column,
column generation on its LP relaxation, then the integer master, a proof by
pattern enumeration where it closes, and a partitioned driver for large
instances.  The model and its proof are written out in the exact family's
notes (`alloc.solvers.exact`); `alloc.solvers.common.configuration.solve`
is the entry (`configuration`).
"""
