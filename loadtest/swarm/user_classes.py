"""The swarm's Locust users, named without loading Locust: the locustfile that defines them
and the user class each architecture runs.

Locust is given the locustfile's path on its command line and a class name from it; the
scenarios, the interactive swarm and the notebooks name them from here, so none of them
imports the locustfile (and with it gevent's patching of the standard library).
"""

from __future__ import annotations

from pathlib import Path

#: The locustfile Locust loads, master and workers alike.
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
#: The Locust user class of each architecture, defined in `LOCUSTFILE`.
USER_CLASSES = {"mrtr": "MrtrUser", "sticky": "StickyUser", "sse-store": "SseStoreUser"}
#: The user class of a swarm on a target (`--target`), calling the target's own tools.
TARGET_USER_CLASS = "TargetUser"
