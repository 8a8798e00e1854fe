"""REINFORCE with a learned state-value baseline (Williams 1992; Sutton & Barto 2018, section 13.4)."""
