"""Production tables change only here: promotion of validated shadow partitions, revert, adoption."""
