"use strict";
const $ = (id) => document.getElementById(id);
const fields = ["strategy", "max_attempts", "window_secs", "backoff_kind", "base_delay_secs", "multiplier", "max_delay_secs"];
const errorIds = ["strategy", "max_attempts", "window_secs", "backoff.kind", "backoff.base_delay_secs", "backoff.multiplier", "backoff.max_delay_secs", "$", "flags"];
let generation = 0;

// value is a field's text as a JSON value: a number when it reads as one,
// else a string, so that the library says what is wrong with it.
function value(id) {
  const text = $(id).value.trim();
  return /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/.test(text) ? Number(text) : text;
}

function descriptor() {
  const kind = $("strategy").value, d = { strategy: kind };
  if (kind === "bounded") {
    d.max_attempts = value("max_attempts");
    if ($("window_secs").value.trim() !== "") d.window_secs = value("window_secs");
  }
  if (kind !== "none") {
    const b = { kind: $("backoff_kind").value, base_delay_secs: value("base_delay_secs") };
    if (b.kind !== "fixed") {
      b.multiplier = value("multiplier");
      if ($("max_delay_secs").value.trim() !== "") b.max_delay_secs = value("max_delay_secs");
    }
    d.backoff = b;
  }
  return d;
}

// enable greys out the fields the strategy and backoff kind do not use.
function enable() {
  const kind = $("strategy").value, fixed = $("backoff_kind").value === "fixed";
  $("max_attempts").disabled = $("window_secs").disabled = kind !== "bounded";
  for (const id of ["backoff_kind", "base_delay_secs", "multiplier", "max_delay_secs"]) $(id).disabled = kind === "none";
  if (fixed) $("multiplier").disabled = $("max_delay_secs").disabled = true;
}

function flagsOf(d) {
  const f = ["--retry-strategy", d.strategy];
  if (d.max_attempts !== undefined) f.push("--retry-max-attempts", d.max_attempts);
  if (d.window_secs !== undefined) f.push("--retry-window-secs", d.window_secs);
  if (d.backoff) {
    f.push("--retry-backoff", d.backoff.kind, "--retry-base-delay-secs", d.backoff.base_delay_secs);
    if (d.backoff.multiplier !== undefined) f.push("--retry-multiplier", d.backoff.multiplier);
    if (d.backoff.max_delay_secs !== undefined) f.push("--retry-max-delay-secs", d.backoff.max_delay_secs);
  }
  return f.join(" ");
}

function clearErrors(ids) {
  for (const id of ids) { $("err-" + id).textContent = ""; }
  for (const id of fields.concat(["flags", "uptime", "failures", "jobs", "outage", "tick"])) $(id).classList.remove("bad");
}

// showErrors puts each problem under its field: the descriptor's path, a
// flag (under the flags), or a parameter.
function showErrors(problems, where) {
  for (const p of problems) {
    let id = where || p.field;
    if (!$("err-" + id)) id = "$";
    const box = $("err-" + id);
    box.textContent += (box.textContent ? "\n" : "") + p.message;
    const input = { "backoff.kind": "backoff_kind", "backoff.base_delay_secs": "base_delay_secs", "backoff.multiplier": "multiplier", "backoff.max_delay_secs": "max_delay_secs" }[id] || id;
    if ($(input) && input !== "$") $(input).classList.add("bad");
  }
}

// post sends a request; one the server sheds as busy (503 BUSY: it runs
// only a few plans and simulations at once, and queues none) is sent again
// after its Retry-After, a few times.
async function post(path, body, accept) {
  let r, text;
  for (let tries = 0; ; tries++) {
    r = await fetch(path, { method: "POST", body: body, headers: accept ? { Accept: accept } : {} });
    text = await r.text();
    if (r.status !== 503 || tries === 4 || !text.includes('"BUSY"')) break;
    await new Promise((done) => setTimeout(done, 1000 * Number(r.headers.get("Retry-After") || 1)));
  }
  if (r.ok) return { ok: true, text: text };
  let err;
  try { err = JSON.parse(text); } catch (e) { err = { errors: [{ field: "$", message: text }] }; }
  return { ok: false, error: err };
}

function escapeHTML(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

// dur writes seconds as lint and the charts write durations: 34m8s, 1h,
// 2m6.996s, 500ms, and whole days past two (3d4h).
function dur(secs) {
  if (secs === 0) return "0s";
  if (secs < 1) {
    const ms = Math.round(secs * 1e6) / 1e3;
    return ms >= 1 ? ms + "ms" : Math.round(secs * 1e6) + "µs";
  }
  let ms = Math.round(secs * 1000), text = "";
  const day = 86400000;
  if (ms >= 2 * day) { text = Math.floor(ms / day) + "d"; ms %= day; if (ms === 0) return text; }
  const h = Math.floor(ms / 3600000), m = Math.floor(ms % 3600000 / 60000), s = (ms % 60000) / 1000;
  if (h > 0) text += h + "h" + m + "m" + s + "s";
  else if (m > 0) text += m + "m" + s + "s";
  else text += s + "s";
  if (text.endsWith("m0s")) text = text.slice(0, -2);
  if (text.endsWith("h0m")) text = text.slice(0, -2);
  return text;
}

// fit grows a text area to show all its text.
function fit(el) {
  el.style.height = "auto";
  el.style.height = el.scrollHeight + 2 + "px";
}

// fromFields validates the form's descriptor, then shows what it does.
async function fromFields() {
  enable();
  const mine = ++generation, d = descriptor(), text = JSON.stringify(d);
  const res = await post("v1/validate", text);
  if (mine !== generation) return;
  clearErrors(errorIds);
  $("flags").value = flagsOf(d);
  fit($("flags"));
  if (!res.ok) { showErrors(res.error.errors); $("canonical").textContent = ""; return; }
  showJSON("canonical", res.text.trim());
  await show(res.text, mine);
}

// fromFlags reads the flags, then fills the form from their strategy.
async function fromFlags() {
  const mine = ++generation, args = $("flags").value.trim().split(/\s+/).filter((a) => a !== "");
  const res = await post("v1/flags", JSON.stringify(args));
  if (mine !== generation) return;
  clearErrors(errorIds);
  if (!res.ok) { showErrors(res.error.errors, "flags"); $("flags").classList.add("bad"); return; }
  const d = JSON.parse(res.text);
  $("strategy").value = d.strategy;
  if (d.max_attempts !== undefined) $("max_attempts").value = d.max_attempts;
  if (d.window_secs !== undefined) $("window_secs").value = d.window_secs;
  if (d.backoff) {
    $("backoff_kind").value = d.backoff.kind;
    $("base_delay_secs").value = d.backoff.base_delay_secs;
    if (d.backoff.multiplier !== undefined) $("multiplier").value = d.backoff.multiplier;
    $("max_delay_secs").value = d.backoff.max_delay_secs === undefined ? "" : d.backoff.max_delay_secs;
  }
  enable();
  showJSON("canonical", res.text.trim());
  await show(res.text, mine);
}

// showJSON shows a descriptor's JSON, which may wrap after a comma but
// not inside a name or a value (unless one is wider than its box).
function showJSON(id, text) {
  $(id).innerHTML = escapeHTML(text).replace(/,/g, ",<wbr>");
}

// known holds the compared strategies' canonical descriptors, by name.
const known = {};

// descriptorOf returns the canonical descriptor of a strategy simulate
// compares with, asking the server once (the smallest outage will do).
async function descriptorOf(name) {
  if (known[name]) return known[name];
  const res = await post("v1/simulate?jobs=1&outage=1m&compare=" + encodeURIComponent(name), "null");
  if (!res.ok) return null;
  // The canonical text, as the library writes it (2.0, not 2).
  const canonical = await post("v1/validate", JSON.stringify(JSON.parse(res.text)[1].descriptor));
  if (!canonical.ok) return null;
  known[name] = canonical.text.trim();
  return known[name];
}

// planEnd is when a plan's picture ends: the fatal failure, or the last
// retry.
function planEnd(p) {
  const last = p.failures[p.failures.length - 1];
  return last.fatal ? last.at_secs : last.retry_at_secs;
}

async function show(canonical, mine) {
  const q = (ids) => ids.map((id) => id + "=" + encodeURIComponent($(id).value.trim())).join("&");
  const other = $("compare").value, sim = "v1/simulate?" + q(["jobs", "outage", "tick"]) + "&compare=" + encodeURIComponent(other);
  // One at a time: the server runs few of these at once, and each takes
  // milliseconds.
  const theirs = await descriptorOf(other);
  const planA = await post("v1/plan?" + q(["uptime", "failures", "tick"]), canonical);
  const planB = theirs ? await post("v1/plan?" + q(["uptime", "failures", "tick"]), theirs) : planA;
  let axis = 0;
  if (planA.ok && planB.ok) axis = Math.max(planEnd(JSON.parse(planA.text)), planEnd(JSON.parse(planB.text)));
  const svgA = await post("v1/plan?" + q(["uptime", "failures", "tick"]) + "&axis=" + axis, canonical, "image/svg+xml");
  const svgB = theirs ? await post("v1/plan?" + q(["uptime", "failures", "tick"]) + "&axis=" + axis, theirs, "image/svg+xml") : svgA;
  const lintA = await post("v1/lint?" + q(["tick"]), canonical);
  const lintB = theirs ? await post("v1/lint?" + q(["tick"]), theirs) : lintA;
  const simSVG = await post(sim, canonical, "image/svg+xml");
  const simRes = await post(sim, canonical);
  const layers = "v1/simulate?scenario=layers&duration=2m" + (layersBudgets[$("layers_budget").value] || "");
  const layersSVG = await post(layers, canonical, "image/svg+xml");
  const layersRes = await post(layers, canonical);
  const collapse = "v1/simulate?scenario=collapse" + ($("collapse_deadlines").value ? "&check-deadlines=true" : "");
  const collapseSVG = await post(collapse, canonical, "image/svg+xml");
  const collapseRes = await post(collapse, canonical);
  const tail = "v1/simulate?scenario=tail" + ($("tail_slow").value ? "&slow-together=true" : "");
  const tailSVG = await post(tail, canonical, "image/svg+xml");
  const tailRes = await post(tail, canonical);
  if (mine !== generation) return;
  clearErrors(["uptime", "failures", "jobs", "outage", "tick"]);
  showJSON("compare-canonical", theirs || "");
  for (const id of ["lint-b-name", "plan-b-name"]) $(id).textContent = other;
  showPlans(planA, planB, svgA, svgB, other);
  if (lintA.ok) {
    const tick = JSON.parse(lintA.text).summary.tick_secs;
    $("lint-tick").textContent = tick > 0 ? "(a controller checks every " + dur(tick) + ")" : "(each retry exactly when due)";
    $("lint").innerHTML = lintHTML(JSON.parse(lintA.text));
  }
  if (lintB.ok) $("lint-b").innerHTML = lintHTML(JSON.parse(lintB.text));
  showFleet(simRes, simSVG, other);
  showLayers(layersRes, layersSVG, JSON.parse(canonical).strategy);
  showCollapse(collapseRes, collapseSVG);
  showTail(tailRes, tailSVG);
}

// showTail shows the tail's chart, and each policy's latency and load.
function showTail(res, svg) {
  $("tail-chart").innerHTML = svg.ok ? svg.text : "";
  if (!res.ok) { $("tail-summary").textContent = ""; return; }
  $("tail-summary").textContent = JSON.parse(res.text).map((p) => p.policy + ": p50 " + p.p50_ms + "ms, p99 " + p.p99_ms +
    "ms, p99.9 " + p.p999_ms + "ms, " + (p.extra_load * 100).toFixed(1) + "% extra load" + (p.truncated ? " (cut short)" : "")).join("; ") + ".";
}

// showCollapse shows the collapse's chart, and how each policy fared.
function showCollapse(res, svg) {
  $("collapse-chart").innerHTML = svg.ok ? svg.text : "";
  if (!res.ok) { $("collapse-summary").textContent = ""; return; }
  $("collapse-summary").textContent = JSON.parse(res.text).map((p) => p.policy + ": " +
    (!p.judged ? "not judged (" + (p.truncated ? "cut short" : "collapsed before the trigger") + ")" :
      (p.recovered ? "recovered " + dur(p.recovery_secs) + " after the trigger" : "never recovered") + ", " +
      (p.settled ? "settled " + dur(p.settled_secs) + " after" : "never settled")) +
    ", " + p.amplification + " attempts a call").join("; ") + ".";
}

// layersBudgets are the query options of the budgets the layers view
// offers: a token bucket, and the Gateway API's windowed defaults.
const token = "&budget-ratio=0.1&budget-burst=10";
const windowed = "&budget-percent=20&budget-interval=10s&budget-min-retries=10&budget-min-interval=1s";
const layersBudgets = { token: token, window: windowed, both: token + windowed };

// showLayers shows the chain's chart, and the calls a request each way.
// layersWhy says why the layers multiply calls, or do not, under a
// strategy of that kind.
const layersWhy = {
  bounded: "Each layer that gives up passes the failure to the layer above, which retries it: the calls multiply with the layers.",
  unless_stopped: "This strategy never gives up, so no layer passes a failure up and the layers above never retry it: retrying at every layer costs about what retrying at the client alone does. What it costs is calls held waiting through the outage, not calls multiplied.",
  none: "none never retries: a request makes one call at each layer.",
};

function showLayers(res, svg, kind) {
  $("layers-chart").innerHTML = svg.ok ? svg.text : "";
  if (!res.ok) { $("layers-summary").textContent = ""; return; }
  $("layers-summary").textContent = JSON.parse(res.text).map((c) => c.chain + ": " + c.amplification + " calls at the bottom a request, " +
    c.succeeded + " of " + c.requests + " requests succeeded" + (c.metastable ? ", never back within capacity" : ", back within capacity " + dur(c.recovery_secs) + " after the outage")).join("; ") + ". " + (layersWhy[kind] || "");
}

// showPlans shows the two plans side by side in one table, and their
// pictures on one time axis.
function showPlans(planA, planB, svgA, svgB, other) {
  if (!planA.ok) {
    showErrors(planA.error.errors);
    $("plan-table").innerHTML = $("plan-chart").innerHTML = $("plan-chart-b").innerHTML = "";
    return;
  }
  const a = JSON.parse(planA.text).failures, b = planB.ok ? JSON.parse(planB.text).failures : [];
  const cells = (f, side) => !f ? '<td class="' + side + '"></td><td class="' + side + '"></td><td class="' + side + '"></td>' :
    '<td class="' + side + '">+' + dur(f.at_secs) + '</td><td class="' + side + '">' + f.in_window + "</td>" +
    (f.fatal ? '<td class="' + side + '" style="color:#c01818">FATAL (' + escapeHTML(f.fatal) + ")</td>" : '<td class="' + side + '">' + dur(f.retry_at_secs - f.at_secs) + "</td>");
  let rows = '<tr><th></th><th class="a" colspan="3">this strategy</th><th class="b" colspan="3">' + escapeHTML(other) + "</th></tr>" +
    '<tr><th>failure</th><th class="a">at</th><th class="a">in window</th><th class="a">waits</th><th class="b">at</th><th class="b">in window</th><th class="b">waits</th></tr>';
  for (let i = 0; i < Math.max(a.length, b.length); i++) rows += "<tr><td>" + (i + 1) + "</td>" + cells(a[i], "a") + cells(b[i], "b") + "</tr>";
  $("plan-table").innerHTML = "<table>" + rows + "</table>";
  $("plan-chart").innerHTML = svgA.ok ? svgA.text : "";
  $("plan-chart-b").innerHTML = svgB.ok ? svgB.text : "";
}

// lintHTML is lint's summary and findings for one strategy.
function lintHTML(r) {
  const s = r.summary;
  let html = '<p class="muted">Gives up ' +
    (s.time_to_fatal_secs === null ? "never" : "after " + dur(s.time_to_fatal_secs) + " (failure " + s.failures_to_fatal + ")") +
    "; longest wait " + dur(s.longest_wait_secs) + "; " + s.retries_first_hour + " retries in the first hour.</p>";
  if (r.findings.length === 0) html += "<p>No findings.</p>";
  for (const f of r.findings) {
    html += '<div class="finding ' + escapeHTML(f.severity) + '"><code>' + escapeHTML(f.severity + " " + f.code) + "</code>: " +
      escapeHTML(f.message) + '<br><span class="muted">fix: ' + escapeHTML(f.fix) + "</span></div>";
  }
  return html;
}

// showFleet shows the outage's chart of both strategies, and what each
// came to.
function showFleet(simRes, simSVG, other) {
  if (!simRes.ok) {
    showErrors(simRes.error.errors);
    $("sim-chart").innerHTML = $("sim-summary").textContent = "";
    return;
  }
  $("sim-chart").innerHTML = simSVG.ok ? simSVG.text : "";
  const [a, b] = JSON.parse(simRes.text);
  const said = (name, r) => {
    const rec = r.recovery_secs;
    return name + ": " + r.runs + " runs, at most " + r.peak_runs_per_min + " a minute; " + r.fatal + " jobs FATAL" +
      (rec ? "; recovered " + dur(rec.p50) + " (p50), " + dur(rec.p99) + " (p99), " + dur(rec.max) + " (max) after the provider came back" : "") + ".";
  };
  $("sim-summary").textContent = said("This strategy", a) + " " + said(other, b);
}

let timer;
function soon(f) { clearTimeout(timer); timer = setTimeout(f, 150); }
for (const id of fields.concat(["uptime", "failures", "jobs", "outage", "tick", "compare", "layers_budget", "collapse_deadlines", "tail_slow"])) {
  $(id).addEventListener("input", () => { enable(); soon(fromFields); });
  $(id).addEventListener("change", () => { enable(); soon(fromFields); });
}
$("flags").addEventListener("input", () => { fit($("flags")); soon(fromFlags); });
// The box's width changes when the page does (a scroll bar appears as the
// charts arrive, the screen turns): its height follows.
let flagsWidth = 0;
new ResizeObserver((entries) => {
  const width = entries[entries.length - 1].contentRect.width;
  if (width !== flagsWidth) { flagsWidth = width; fit($("flags")); }
}).observe($("flags"));
fromFields();
