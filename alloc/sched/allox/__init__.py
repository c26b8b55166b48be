"""AlloX (Le et al., EuroSys'20): jobs on GPUs or CPUs, min-cost matching."""
POLICIES = ()
