"""Calibration: the simulation's inputs measured on live replicas, and the live cluster
set beside its simulated twin at the same loads."""
