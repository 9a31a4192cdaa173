"""The bench: the lab's server beside its peers under `wrk`, round by round, with
microbenchmarks in process, instruction counts under callgrind, and the memory of a held
legacy call beside the official SDK's."""
