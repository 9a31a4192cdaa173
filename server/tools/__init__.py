"""What the server serves: the demo tools, prompts and resources, and conformance fixtures."""
