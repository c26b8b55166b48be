"""Heterogeneity-aware, fair time-share policies (Gavel, OSDI'20)."""
