"""REINFORCE: Monte-Carlo policy gradient (Williams 1992)."""
