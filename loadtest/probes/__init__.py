"""Probes of a live replica process: the memory a held call adds, the CPU it spends per
request, the spread of its service time, and the calls a cluster holds waiting."""
