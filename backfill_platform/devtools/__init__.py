"""Development tooling: the demo, the benchmark, the synthetic archive, jar repair."""
