"""Asynchronous PPO (APPO) as Sample Factory runs it."""
