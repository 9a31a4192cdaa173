"""Who may call the swarm's web UI: its own page on this machine, and clients that are
not browsers.

The UI binds 127.0.0.1, which keeps other machines out but not other web pages: any page
the operator's browser shows can send it a form, and a name rebound to 127.0.0.1 can read
it. So every request, to the lab's routes and to Locust's own (its `/stats/requests` poll
carries the lab's tables too), passes these rules:

- `Host` names this machine (`127.0.0.1`, `localhost`, `[::1]`, any port): a rebound
  name is refused (DNS-rebinding protection, as the server's door does on loopback);
- an `Origin`, when sent, is the UI's own (`http://` and the request's `Host`);
  `Origin: null` (sandboxed frames, files) is refused. Clients that are not browsers send
  none;
- `Sec-Fetch-Site`, when sent, is `same-origin` or `none` (typed in the address bar): a
  browser says `cross-site` or `same-site` for another page's request;
- a request that changes the lab (`POST /lab/...`) also carries `X-Lab-Tab: 1`, which the
  tab's script sends and which a cross-origin form cannot (a page's script that tried would
  need a CORS preflight the UI never grants).

A refusal is a 403 whose JSON `error` says which rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

#: The header the tab's own script sends with every request that changes the lab.
TAB_HEADER = "X-Lab-Tab"
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SAME_SITE_FETCHES = frozenset({"same-origin", "none"})


def _hostname(url: str) -> str | None:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return None


def refusal(method: str, path: str, headers: Mapping[str, str]) -> str | None:
    """Why the UI refuses a request (`headers` by lowercase name), or None to serve it."""
    host = headers.get("host", "").strip().lower()
    if _hostname(f"//{host}") not in LOCAL_HOSTS:
        return f"Host {host!r} is not this machine: the lab's UI answers 127.0.0.1 only"
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower().rstrip("/") != f"http://{host}":
        return f"Origin {origin!r} is not the lab's UI: another page may not drive it"
    fetch_site = headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in SAME_SITE_FETCHES:
        return f"a {fetch_site} request: another page may not drive the lab's UI"
    changes_lab = method.upper() not in ("GET", "HEAD", "OPTIONS") and path.startswith("/lab/")
    if changes_lab and headers.get(TAB_HEADER.lower(), "").strip() != "1":
        return f"the lab changes only at the tab's request (header {TAB_HEADER}: 1)"
    return None
