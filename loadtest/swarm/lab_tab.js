// The lab's fault buttons, shown with Locust's "Lab" tab (see loadtest/swarm/lab_tab.py).
// Locust's UI is a React app that only renders tables in extra tabs, so the buttons live
// in a panel of their own, outside React's tree, shown while the Lab tab is open.
(function () {
  const faults = [
    ["rolling-upgrade", "Rolling upgrade"],
    ["crash", "Crash a replica"],
    ["restart", "Restart it"],
    ["redis-outage", "Redis outage"],
  ];
  const panel = document.createElement("div");
  panel.id = "lab-faults";
  panel.style.cssText =
    "position:fixed;right:16px;bottom:16px;z-index:2000;padding:10px 12px;" +
    "border-radius:8px;background:#1e293b;color:#f1f5f9;font:14px sans-serif;" +
    "box-shadow:0 2px 10px rgba(0,0,0,.4);display:none";
  const title = document.createElement("div");
  title.textContent = "Inject a fault";
  title.style.cssText = "font-weight:bold;margin-bottom:6px";
  panel.appendChild(title);
  const replica = document.createElement("select");
  replica.id = "lab-replica";
  replica.title = "replica to crash or restart (default: the first up, or the first down)";
  replica.style.marginRight = "6px";
  panel.appendChild(replica);
  const status = document.createElement("div");
  status.id = "lab-status";
  status.style.cssText = "margin-top:6px;max-width:480px";
  for (const [fault, label] of faults) {
    const button = document.createElement("button");
    button.textContent = label;
    button.dataset.fault = fault;
    button.style.cssText = "margin:2px;padding:4px 8px;cursor:pointer";
    button.onclick = async () => {
      const target = ["crash", "restart"].includes(fault) && replica.value;
      const body = target ? { replica: target } : {};
      const reply = await fetch("./lab/faults/" + fault, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await reply.json();
      status.textContent = reply.ok
        ? "started: " + JSON.stringify(answer) + " (see Lab timeline)"
        : "refused: " + answer.error;
    };
    panel.appendChild(button);
  }
  panel.appendChild(status);

  async function refreshReplicas() {
    const reply = await fetch("./lab/replicas");
    if (!reply.ok) return;
    const names = (await reply.json()).map((r) => r.id);
    const shown = Array.from(replica.options).map((o) => o.value);
    if (JSON.stringify(["", ...names]) === JSON.stringify(shown)) return;
    const chosen = replica.value;
    replica.replaceChildren(new Option("(any replica)", ""));
    for (const name of names) replica.appendChild(new Option(name, name));
    replica.value = names.includes(chosen) ? chosen : "";
  }

  function onLabTab() {
    return new URLSearchParams(window.location.search).get("tab") === "lab";
  }

  document.body.appendChild(panel);
  setInterval(() => {
    const show = onLabTab();
    panel.style.display = show ? "block" : "none";
    if (show && replica.options.length === 0) refreshReplicas();
  }, 300);
  setInterval(() => onLabTab() && refreshReplicas(), 5000);
})();
