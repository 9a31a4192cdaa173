"""The cluster harness: replicas of the server behind HAProxy, Redis where needed, and the
operator's moves on them (a rolling upgrade). It starts and stops processes and knows
nothing of the users who will call them."""
