// The Lab tab's panel (see loadtest/labtab/tab.py): fault buttons, the Lab chart with
// each fault's span drawn over the swarm's traffic, and the failures explained.
// Locust's UI is a React app that only renders tables in extra tabs, so the panel lives
// outside React's tree, placed under the Lab table while the Lab tab is open. Times are
// this browser's clock, as on Locust's own charts (toLocaleTimeString); the page tells the
// server its offset from UTC, so that the Lab timeline reads the same clock.
(function () {
  document.cookie =
    "lab_utc_offset_min=" + -new Date().getTimezoneOffset() + ";path=/;SameSite=Lax";
  const faults = [
    ["rolling-upgrade", "Rolling upgrade"],
    ["crash", "Crash a replica"],
    ["restart", "Restart it"],
    ["redis-outage", "Redis outage"],
  ];
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = { requests: "#2563eb", failures: "#dc2626", held: "#d97706", inFlight: "#64748b" };

  function element(tag, css, text) {
    const made = document.createElement(tag);
    if (css) made.style.cssText = css;
    if (text) made.textContent = text;
    return made;
  }

  const panel = element(
    "div",
    "position:absolute;z-index:1000;display:none;box-sizing:border-box;padding:12px 16px;" +
      "border:1px solid rgba(128,128,128,.35);border-radius:4px;font:14px sans-serif",
  );
  panel.id = "lab-panel";
  const buttons = element("div", "display:flex;flex-wrap:wrap;align-items:center;gap:6px");
  buttons.id = "lab-faults";
  buttons.appendChild(element("b", "margin-right:6px", "Inject a fault"));
  const replica = element("select", "margin-right:6px");
  replica.id = "lab-replica";
  replica.title = "replica to crash or restart (default: the first up, or the first down)";
  buttons.appendChild(replica);
  const status = element("div", "margin:6px 0 10px;min-height:1.2em");
  status.id = "lab-status";
  for (const [fault, label] of faults) {
    const button = element("button", "padding:4px 8px;cursor:pointer", label);
    button.dataset.fault = fault;
    button.onclick = async () => {
      const target = ["crash", "restart"].includes(fault) && replica.value;
      const reply = await fetch("./lab/faults/" + fault, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Lab-Tab": "1" },
        body: JSON.stringify(target ? { replica: target } : {}),
      });
      const answer = await reply.json();
      status.textContent = reply.ok
        ? "started at " + new Date().toLocaleTimeString() + ": " + answer.said +
          " (its steps: Lab timeline)"
        : "refused: " + answer.error;
      refreshChart();
    };
    buttons.appendChild(button);
  }
  const chart = element("div");
  chart.id = "lab-chart";
  const failures = element("div", "margin-top:8px");
  failures.id = "lab-failures";
  const note = element(
    "div",
    "margin-top:8px;opacity:.75;font-size:12px",
    "In flight: the requests a replica is serving now, its held calls included. Held calls: " +
      "legacy calls whose SSE stream stays open while their user thinks (/healthz " +
      "open_streams), each counted once. MRTR holds none. Times: this browser's clock, as " +
      "on Locust's Charts tab.",
  );
  panel.append(buttons, status, chart, failures, note);
  document.body.appendChild(panel);

  function svg(tag, attributes, text) {
    const made = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attributes)) made.setAttribute(k, v);
    if (text !== undefined) made.textContent = text;
    return made;
  }

  function niceStep(range, count) {
    const raw = range / count;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
    return 10 * power;
  }

  // One chart: lines over time (`rows` of [t_ms, value, value...]) between `range`'s two
  // times, the faults' spans drawn under them.
  function drawChart(title, width, rows, lines, range, faultSpans) {
    const height = 170;
    const pad = { left: 44, right: 12, top: 26, bottom: 24 };
    const root = svg("svg", { width, height, role: "img", "aria-label": title });
    root.classList.add("lab-chart");
    const [t0, t1] = range;
    const span = Math.max(t1 - t0, 1000);
    const top = Math.max(1, ...rows.flatMap((row) => lines.map((line) => row[line.index] || 0)));
    const yStep = niceStep(top, 4);
    const yMax = Math.ceil((top * 1.05) / yStep) * yStep;
    const plotTop = pad.top;
    const plotHeight = height - pad.top - pad.bottom;
    const x = (t) => pad.left + ((t - t0) / span) * (width - pad.left - pad.right);
    const y = (v) => plotTop + plotHeight - (v / yMax) * plotHeight;
    for (const fault of faultSpans) {
      const start = Math.max(fault.start_ms, t0);
      const end = fault.end_ms === null ? t1 : Math.min(fault.end_ms, t1);
      if (end < t0 || start > t1) continue;
      const band = svg("rect", {
        x: x(start), y: plotTop, width: Math.max(x(end) - x(start), 2), height: plotHeight,
        fill: "rgba(220,38,38,.12)", stroke: "rgba(220,38,38,.5)", "stroke-dasharray": "3 2",
      });
      band.classList.add("lab-fault");
      band.appendChild(svg("title", {}, fault.label));
      root.appendChild(band);
      root.appendChild(svg("text", { x: x(start) + 3, y: plotTop + 12, "font-size": 11,
        fill: "#b91c1c" }, fault.label));
      for (const step of fault.steps) {
        if (step.t_ms < t0) continue;
        const mark = svg("line", {
          x1: x(step.t_ms), x2: x(step.t_ms), y1: plotTop + 16, y2: plotTop + plotHeight,
          stroke: "rgba(185,28,28,.45)", "stroke-dasharray": "1 3",
        });
        mark.appendChild(svg("title", {},
          new Date(step.t_ms).toLocaleTimeString() + " " + step.label));
        root.appendChild(mark);
      }
    }
    for (let v = 0; v <= yMax + 1e-9; v += yStep) {
      root.appendChild(svg("line", {
        x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), stroke: "rgba(128,128,128,.2)",
      }));
      root.appendChild(svg("text", {
        x: pad.left - 6, y: y(v) + 4, "font-size": 11, "text-anchor": "end", fill: "currentColor",
      }, String(Math.round(v * 100) / 100)));
    }
    const tStep = niceStep(span / 1000, 6) * 1000;
    for (let t = Math.ceil(t0 / tStep) * tStep; t <= t1; t += tStep) {
      root.appendChild(svg("text", {
        x: x(t), y: height - 6, "font-size": 11, "text-anchor": "middle", fill: "currentColor",
      }, new Date(t).toLocaleTimeString()));
    }
    for (const line of lines) {
      const points = rows.map((row) => x(row[0]).toFixed(1) + "," + y(row[line.index]).toFixed(1));
      if (points.length === 0) continue;
      if (line.area) {
        // An area under the line: a series equal to another stays visible beneath it.
        const first = x(rows[0][0]).toFixed(1);
        const last = x(rows[rows.length - 1][0]).toFixed(1);
        const base = y(0).toFixed(1);
        root.appendChild(svg("polygon", {
          points: [first + "," + base, ...points, last + "," + base].join(" "),
          fill: line.color, "fill-opacity": 0.25, stroke: "none",
        }));
      }
      root.appendChild(svg("polyline", {
        points: points.join(" "), fill: "none", stroke: line.color, "stroke-width": 1.8,
        "stroke-dasharray": line.dashed ? "5 3" : "none",
      }));
    }
    root.appendChild(svg("text", { x: 0, y: 14, "font-weight": "bold", "font-size": 13,
      fill: "currentColor" }, title));
    // The legend at the right; text is not measured before it is on the page, so its width
    // is estimated.
    let legendX = width - pad.right;
    for (const line of [...lines].reverse()) {
      legendX -= 22 + line.name.length * 6.8;
      root.appendChild(svg("rect", { x: legendX, y: 6, width: 14, height: 4, fill: line.color }));
      root.appendChild(svg("text", { x: legendX + 18, y: 12, "font-size": 12,
        fill: "currentColor" }, line.name));
    }
    return root;
  }

  async function refreshChart() {
    const reply = await fetch("./lab/chart");
    if (!reply.ok) return;
    const data = await reply.json();
    const width = Math.max(panel.clientWidth - 34, 300);
    const starts = [data.traffic, data.load].filter((rows) => rows.length).map((r) => r[0][0]);
    chart.replaceChildren();
    if (data.traffic.length < 2 && data.load.length < 2) {
      chart.appendChild(element("div", "opacity:.75", "The Lab chart starts once the users run."));
    } else {
      const range = [Math.min(...starts), data.now_ms];
      chart.appendChild(drawChart("HTTP requests per second, all replicas", width, data.traffic, [
        { index: 1, name: "requests/s", color: COLORS.requests },
        { index: 2, name: "failures/s", color: COLORS.failures },
      ], range, data.faults));
      chart.appendChild(drawChart("Calls held and requests in flight, all replicas", width,
        data.load, [
          { index: 1, name: "held calls", color: COLORS.held, area: true },
          { index: 2, name: "in flight", color: COLORS.inFlight, dashed: true },
        ], range, data.faults));
    }
    failures.replaceChildren(element("b", "", "Failures explained"));
    if (data.failures.length === 0) {
      failures.appendChild(element("div", "", "No request has failed so far."));
    } else {
      const list = element("ul", "margin:4px 0;padding-left:20px");
      for (const sentence of data.failures) list.appendChild(element("li", "", sentence));
      failures.appendChild(list);
    }
  }

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

  // Under the Lab table, as wide as it, wherever React has put it.
  function place() {
    const table = document.querySelector("table");
    const box = table && (table.closest(".MuiPaper-root") || table.parentElement);
    if (!box) return false;
    const rect = box.getBoundingClientRect();
    panel.style.top = rect.bottom + window.scrollY + 16 + "px";
    panel.style.left = rect.left + window.scrollX + "px";
    panel.style.width = rect.width + "px";
    return true;
  }

  let shownBefore = false;
  setInterval(() => {
    const show = onLabTab() && place();
    panel.style.display = show ? "block" : "none";
    if (show && !shownBefore) {
      refreshReplicas();
      refreshChart();
    }
    shownBefore = show;
  }, 300);
  setInterval(() => onLabTab() && refreshChart(), 2000);
  setInterval(() => onLabTab() && refreshReplicas(), 5000);
})();
