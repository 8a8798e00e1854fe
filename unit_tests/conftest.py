"""Test-wide settings: one torch thread (2-core machines), and the repo root importable."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
torch.set_num_threads(1)


def pytest_configure(config):
    config.addinivalue_line('markers', 'slow: an end-to-end run of an entry point in a subprocess (deselect with -m "not slow")')
