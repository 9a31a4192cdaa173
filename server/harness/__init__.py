"""Running the server from outside: as a child process, and under the conformance suite."""
