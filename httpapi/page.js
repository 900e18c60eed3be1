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

function secs(n) {
  if (n >= 3600) return (n / 3600).toFixed(n % 3600 ? 2 : 0) + " h";
  if (n >= 60) return (n / 60).toFixed(n % 60 ? 1 : 0) + " min";
  return n + " s";
}

// fromFields validates the form's descriptor, then shows what it does.
async function fromFields() {
  enable();
  const mine = ++generation, d = descriptor(), text = JSON.stringify(d);
  const res = await post("v1/validate", text);
  if (mine !== generation) return;
  clearErrors(errorIds);
  $("flags").value = flagsOf(d);
  if (!res.ok) { showErrors(res.error.errors); $("canonical").textContent = ""; return; }
  $("canonical").textContent = res.text.trim();
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
  $("canonical").textContent = res.text.trim();
  await show(res.text, mine);
}

async function show(canonical, mine) {
  const q = (ids) => ids.map((id) => id + "=" + encodeURIComponent($(id).value.trim())).join("&");
  // One at a time: the server runs few of these at once, and each takes
  // milliseconds.
  const planRes = await post("v1/plan?" + q(["uptime", "failures"]), canonical);
  const planSVG = await post("v1/plan?" + q(["uptime", "failures"]), canonical, "image/svg+xml");
  const lintRes = await post("v1/lint", canonical);
  const simSVG = await post("v1/simulate?" + q(["jobs", "outage", "tick"]), canonical, "image/svg+xml");
  const simRes = await post("v1/simulate?" + q(["jobs", "outage", "tick"]), canonical);
  if (mine !== generation) return;
  clearErrors(["uptime", "failures", "jobs", "outage", "tick"]);
  if (planRes.ok) {
    const p = JSON.parse(planRes.text);
    let rows = "<tr><th>failure</th><th>at</th><th>in window</th><th>owed</th><th>credited</th><th>retry at</th></tr>";
    p.failures.forEach((f, i) => {
      rows += "<tr><td>" + (i + 1) + "</td><td>+" + secs(f.at_secs) + "</td><td>" + f.in_window + "</td>" +
        (f.fatal ? '<td colspan="3" style="text-align:left;color:#c01818">FATAL (' + escapeHTML(f.fatal) + ")</td>" :
          "<td>" + secs(f.owed_secs) + "</td><td>" + secs(f.credited_secs) + "</td><td>+" + secs(f.retry_at_secs) + "</td>") + "</tr>";
    });
    $("plan-table").innerHTML = "<table>" + rows + "</table>";
    $("plan-chart").innerHTML = planSVG.ok ? planSVG.text : "";
  } else {
    showErrors(planRes.error.errors);
    $("plan-table").innerHTML = $("plan-chart").innerHTML = "";
  }
  if (lintRes.ok) {
    const r = JSON.parse(lintRes.text), s = r.summary;
    let html = '<p class="muted">When every run crashes: gives up ' +
      (s.time_to_fatal_secs === null ? "never" : "after " + secs(s.time_to_fatal_secs) + " (failure " + s.failures_to_fatal + ")") +
      "; longest wait " + secs(s.longest_wait_secs) + "; " + s.retries_first_hour + " retries in the first hour.</p>";
    if (r.findings.length === 0) html += "<p>No findings.</p>";
    for (const f of r.findings) {
      html += '<div class="finding ' + escapeHTML(f.severity) + '"><code>' + escapeHTML(f.severity + " " + f.code) + "</code>: " +
        escapeHTML(f.message) + '<br><span class="muted">fix: ' + escapeHTML(f.fix) + "</span></div>";
    }
    $("lint").innerHTML = html;
  }
  if (simRes.ok) {
    const r = JSON.parse(simRes.text), rec = r.recovery_secs;
    $("sim-chart").innerHTML = simSVG.ok ? simSVG.text : "";
    $("sim-summary").textContent = r.runs + " runs, at most " + r.peak_runs_per_min + " a minute; " + r.fatal + " jobs FATAL" +
      (rec ? "; recovered " + secs(rec.p50) + " (p50), " + secs(rec.p99) + " (p99), " + secs(rec.max) + " (max) after the provider came back" : "") + ".";
  } else {
    showErrors(simRes.error.errors);
    $("sim-chart").innerHTML = "";
    $("sim-summary").textContent = "";
  }
}

let timer;
function soon(f) { clearTimeout(timer); timer = setTimeout(f, 150); }
for (const id of fields.concat(["uptime", "failures", "jobs", "outage", "tick"])) {
  $(id).addEventListener("input", () => { enable(); soon(fromFields); });
  $(id).addEventListener("change", () => { enable(); soon(fromFields); });
}
$("flags").addEventListener("input", () => soon(fromFlags));
fromFields();
