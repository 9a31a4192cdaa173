"""Soaks: legitimate calls served beside an attack on availability (idle sockets, slow
bodies, abandoned waits, CPU-heavy and oversized requests), each attack bounded."""
