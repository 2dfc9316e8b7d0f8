"""``/ui``: the worker's live status page: connectors, tasks and traces, DR readiness, lag per partition,
throughput. Kafka Connect has no such resource; it is not part of the OpenAPI document.

One HTML page with its script inline, no front-end build step. It polls ``/ui/state`` every two
seconds; the throughput chart is the difference of successive record counts, drawn as SVG.
"""

from __future__ import annotations

import re
import time
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from api.models import DrillSummary
from connectors.rest_extension import MirrorSinkRest
from mirror_sink.worker.herder import Herder
from mirror_sink.worker.herder_types import HerderError

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mirror-sink worker</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; }
  h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
  table { border-collapse: collapse; margin: .3em 0; }
  td, th { border-bottom: 1px solid #ddd; padding: .25em .8em .25em 0; text-align: left; }
  .RUNNING { color: #17803d; font-weight: 600; } .FAILED { color: #c0262d; font-weight: 600; }
  .PAUSED, .STOPPED, .UNASSIGNED, .RESTARTING { color: #9a6700; font-weight: 600; }
  pre.trace { background: #fff4f4; border-left: 3px solid #c0262d; padding: .5em; max-height: 14em; overflow: auto;
              white-space: pre-wrap; max-width: 70em; }
  .cause { color: #c0262d; font-weight: 600; margin: .3em 0; white-space: pre-wrap; max-width: 70em; }
  details > summary { cursor: pointer; color: #777; }
  .muted { color: #777; }
  svg { background: #fafafa; border: 1px solid #eee; }
</style>
</head>
<body>
<h1>mirror-sink worker <span id="worker"></span></h1>
<div class="muted">refreshed every 2 s &middot; <span id="updated">loading...</span></div>
<div id="connectors"></div>
<script>
const history = {};  // connector -> [[seconds, records]]
const ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"};
function esc(s) { return String(s).replace(/[&<>"]/g, c => ENTITIES[c]); }
function chart(points) {
  if (points.length < 2) return '<div class="muted">throughput: waiting for data</div>';
  const rates = [];
  for (let i = 1; i < points.length; i++) {
    const dt = points[i][0] - points[i - 1][0];
    rates.push([points[i][0], dt > 0 ? Math.max(0, points[i][1] - points[i - 1][1]) / dt : 0]);
  }
  const w = 360, h = 80, t0 = rates[0][0], t1 = rates[rates.length - 1][0] || t0 + 1;
  const top = Math.max(1, ...rates.map(r => r[1]));
  const xy = rates.map(r => [((r[0] - t0) / Math.max(1, t1 - t0)) * w, h - (r[1] / top) * (h - 4)]);
  const last = rates[rates.length - 1][1];
  return '<div>throughput: <b class="rate">' + last.toFixed(0) + '</b> records/s (peak ' + top.toFixed(0) + ')</div>' +
    '<svg width="' + w + '" height="' + h + '"><polyline fill="none" stroke="#2f6fbf" stroke-width="2" points="' +
    xy.map(p => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ') + '"/></svg>';
}
// The failure's own words first; Python's traceback folded below them.
// A traceback the reader unfolded stays unfolded across refreshes (``key`` names it).
function failure(cause, trace, kind, key) {
  let html = '<div class="cause ' + kind + '-cause">' + esc(cause) + '</div>';
  if (trace && trace !== cause) {
    html += '<details data-key="' + esc(key) + '"><summary>traceback</summary><pre class="trace ' + kind +
      '-trace">' + esc(trace) + '</pre></details>';
  }
  return html;
}
function render(state) {
  document.getElementById("worker").textContent = state.worker;
  document.getElementById("updated").textContent = new Date().toLocaleTimeString();
  let html = "";
  if (!state.connectors.length) html = '<p class="muted">no connectors</p>';
  for (const c of state.connectors) {
    const pts = history[c.name] = (history[c.name] || []).concat([[state.time, c.records]]).slice(-150);
    html += '<section class="connector" data-name="' + esc(c.name) + '">';
    html += '<h2>' + esc(c.name) + ' <span class="state ' + esc(c.state) + '">' + esc(c.state) + '</span></h2>';
    if (c.trace) html += failure(c.cause, c.trace, "connector", c.name);
    html += '<table><tr><th>task</th><th>state</th><th>worker</th><th>transactions</th></tr>';
    for (const t of c.tasks) {
      html += '<tr class="task"><td>' + t.id + '</td><td class="state ' + esc(t.state) + '">' + esc(t.state) +
        '</td><td>' + esc(t.worker_id) + '</td><td class="transactions">' + esc(t.transactions) + '</td></tr>';
      const key = c.name + "/" + t.id;
      if (t.trace) html += '<tr><td colspan="4">' + failure(t.cause, t.trace, "task", key) + '</td></tr>';
    }
    html += '</table>';
    const r = c.readiness;
    html += '<div class="readiness">DR readiness: <b class="readiness-score ' + (r.score >= 80 ? "RUNNING" :
      r.score >= 50 ? "PAUSED" : "FAILED") + '">' + r.score + '</b>/100';
    if (r.reasons.length) {
      html += '<details data-key="' + esc(c.name) + '/readiness"><summary>' + r.reasons.length +
        ' reasons for the points lost</summary><ul class="readiness-reasons">' +
        r.reasons.map(x => '<li>' + esc(x) + '</li>').join("") + '</ul></details>';
    }
    html += '</div>' + chart(pts);
    html += '<table class="lag"><tr><th>target partition</th><th>lag (records)</th><th>lag (seconds)</th>' +
      '<th>verified to</th></tr>';
    for (const l of c.lag) {
      const verified = c.verified[l.topic + "-" + l.partition];
      html += '<tr><td>' + esc(l.topic) + '-' + l.partition + '</td><td class="lag-records">' + l.records +
        '</td><td>' + l.seconds.toFixed(1) + '</td><td class="verified">' +
        (verified === undefined ? '<span class="muted">-</span>' : verified) + '</td></tr>';
    }
    if (!c.lag.length) html += '<tr><td colspan="4" class="muted">not measured yet</td></tr>';
    html += '</table>';
    if (c.mismatches) html += '<div class="cause task-cause">verification found ' + c.mismatches +
      ' mismatches: see the log</div>';
    if (c.drills.length) {
      html += '<table class="drills"><tr><th>DR drill</th><th>started</th><th>outcome</th><th>RPO (records)</th>' +
        '<th>RPO (seconds)</th></tr>';
      for (const d of c.drills) {
        html += '<tr><td>' + esc(d.drill_id) + '</td><td>' + esc(d.started) + '</td><td class="drill-outcome state ' +
          (d.outcome === "passed" ? "RUNNING" : "FAILED") + '">' + esc(d.outcome) + '</td><td>' + d.rpo_records +
          '</td><td>' + d.rpo_seconds.toFixed(1) + '</td></tr>';
      }
      html += '</table>';
    }
    html += '</section>';
  }
  const box = document.getElementById("connectors");
  const open = new Set([...box.querySelectorAll("details[open]")].map(d => d.dataset.key));
  box.innerHTML = html;
  for (const d of box.querySelectorAll("details")) if (open.has(d.dataset.key)) d.open = true;
}
async function refresh() {
  try {
    const response = await fetch("ui/state");
    render(await response.json());
  } catch (e) {
    document.getElementById("updated").textContent = "worker unreachable: " + e;
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
"""


def router(herder: Herder) -> APIRouter:
    """The page at ``/ui`` and its data at ``/ui/state`` (neither is part of Connect's API)."""
    routes = APIRouter()
    mirror = MirrorSinkRest(herder.queries.connector)

    @routes.get("/ui", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        return HTMLResponse(_PAGE)

    @routes.get("/ui/state", include_in_schema=False)
    def state() -> dict[str, Any]:
        connectors = []
        for name in herder.queries.names():
            try:
                status = herder.queries.status(name)
                lag = mirror.lag(name)
                records = herder.queries.mirrored_records(name)
                verified = mirror.verified(name)
                drills = [DrillSummary.of(r) for r in mirror.drills(name)[:3]]
                mismatches = mirror.verify_mismatches(name)
                versions = herder.queries.transaction_versions(name)
                readiness = mirror.readiness(name)
            except HerderError:
                continue  # deleted meanwhile
            connectors.append(
                {
                    "name": name,
                    "state": status.connector.state.value,
                    "trace": status.connector.trace,
                    "cause": failure_cause(status.connector.trace),
                    "tasks": [
                        {
                            "id": t.id,
                            "state": t.status.state.value,
                            "worker_id": t.status.worker_id,
                            "trace": t.status.trace,
                            "cause": failure_cause(t.status.trace),
                            "transactions": _TRANSACTIONS.get(versions.get(t.id, -1), ""),
                        }
                        for t in status.tasks
                    ],
                    "lag": [
                        {"topic": x.topic, "partition": x.partition, "records": x.records, "seconds": x.seconds}
                        for x in lag
                    ],
                    "records": records,
                    "verified": {f"{t}-{p}": offset for (t, p), offset in verified.items()},
                    "mismatches": mismatches,
                    "drills": [d.model_dump() for d in drills],
                    "readiness": {"score": readiness.score, "reasons": readiness.reasons()},
                }
            )
        return {"worker": herder.worker.worker_id, "time": time.time(), "connectors": connectors}

    return routes


#: How the page names each transaction protocol (a task running elsewhere shows nothing).
_TRANSACTIONS = {2: "version 2 (KIP-890)", 1: "version 1", 0: "none (at least once)"}

_TRACEBACK = "Traceback (most recent call last):"
_QUALIFIED = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*)(?:: (.*))?$", re.S)


def failure_cause(trace: str | None) -> str | None:
    """What went wrong, in the failure's own words: the message of the exception raised last (the one
    a chain ends with), without Python's frames or the exception's module path. A trace that is not a
    traceback (a line naming an unreachable cluster, say) is its own cause."""
    if not trace:
        return None
    lines = trace.rstrip("\n").split("\n")
    starts = [i for i, line in enumerate(lines) if line == _TRACEBACK]
    if not starts:
        return trace
    i = starts[-1] + 1
    while i < len(lines) and (lines[i].startswith(" ") or not lines[i]):
        i += 1  # the frames: "  File ...", their source lines, carets
    raised = "\n".join(lines[i:]).strip()
    match = _QUALIFIED.match(raised)
    if match is None:
        return raised or trace
    name, message = match.group(1), match.group(2)
    return message.strip() if message and message.strip() else name
