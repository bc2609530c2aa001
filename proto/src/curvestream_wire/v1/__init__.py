"""Generated protobuf modules of the v1 wire contract (``make proto`` regenerates them)."""
