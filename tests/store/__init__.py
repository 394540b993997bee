"""The run store: its contract, its faults, runs shared between real processes."""
