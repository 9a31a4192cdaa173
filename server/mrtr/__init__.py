"""Multi Round-Trip Requests (SEP-2322): attempts that end `input_required`, sealed state."""
