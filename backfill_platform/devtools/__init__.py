"""Development tooling: the demo, the benchmark, the synthetic archive, the JVM jars' resolution."""
