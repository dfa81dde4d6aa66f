"""Simulation harnesses: each study's verdict on simulated campaigns, with and without a planted
effect, to show it finds what is there and stays quiet when nothing is (bench/verdicts.py)."""
