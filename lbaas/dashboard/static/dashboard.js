// The lbaas dashboard: one first read of /dashboard/topology, then live updates from the
// server-sent events of /dashboard/events. Actions call the API's own routes, so the API's
// RBAC decides; a refusal is shown as the API words it. Every text goes in through
// textContent: names and errors come from tenants.
//
// Under auth_strategy = keystone every call needs a Keystone token: the page asks for one
// (POST /dashboard/login, or a token pasted in) and sends it as X-Auth-Token on every call,
// the event stream included; any 401 (expired, revoked) brings the login back. Under the
// other strategies it never sees a 401 and sends nothing of its own.
"use strict";

const WINDOW_SECONDS = 300; // the traffic graphs show the last five minutes
const samples = new Map(); // listener id -> [{at, connections}], at on the server's clock
// listener id -> "up" or "down": the agents' latest probe of its VIP:port, from the
// traffic events (absent: no agent probes it). A VIP that stops answering while its
// members stay green is exactly what the member rows alone cannot show.
const probes = new Map();

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

function badge(status) {
  return el("span", { class: "badge s-" + status, title: status }, status);
}

function notice(text, ok) {
  const box = document.getElementById("notice");
  box.textContent = text;
  box.className = ok ? "ok" : "";
  box.hidden = false;
}

// --- who is calling --------------------------------------------------------------------
// The token lives in sessionStorage: this tab only, kept over a reload, gone with the tab.
const TOKEN_KEY = "lbaas-keystone-token";
let login = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null"); // {token, expires_at, user, project}
let stream = null; // the open event stream's AbortController
let expiry = null; // the timer that ends the login when its token expires

function headers(extra) {
  const out = { Accept: "application/json", ...extra };
  if (login) out["X-Auth-Token"] = login.token;
  return out;
}

function showLogin(why) {
  login = null;
  sessionStorage.removeItem(TOKEN_KEY);
  clearTimeout(expiry);
  if (stream) stream.abort();
  document.getElementById("loadbalancers").replaceChildren();
  document.getElementById("count").textContent = "";
  document.getElementById("who").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("notice").hidden = true;
  const live = document.getElementById("live");
  live.dataset.state = "out";
  live.textContent = "logged out";
  document.getElementById("login-why").textContent = why;
  document.getElementById("login").hidden = false;
}

// A 401 is Keystone's word that the token is missing, expired or revoked.
async function call(path, options) {
  const response = await fetch(path, { ...options, headers: headers(options.headers) });
  if (response.status === 401) {
    showLogin(login ? "Keystone refused the token (expired, revoked or not valid): log in again."
      : "Log in with your OpenStack user to see your project's load balancers.");
  }
  return response;
}

function loggedIn(issued) {
  login = issued;
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify(issued));
  document.getElementById("login").hidden = true;
  document.getElementById("notice").hidden = true;
  start();
}

async function passwordLogin(event) {
  event.preventDefault();
  const form = event.target;
  const fields = Object.fromEntries(new FormData(form));
  form.elements.password.value = "";
  const response = await fetch("/dashboard/login", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(fields),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    document.getElementById("login-why").textContent =
      `Not logged in (${response.status}): ${answer.faultstring || response.statusText}`;
    return;
  }
  loggedIn(answer);
}

function tokenLogin(event) {
  event.preventDefault();
  const field = event.target.elements.token;
  const token = field.value.trim();
  field.value = "";
  if (token) loggedIn({ token, expires_at: null, user: null, project: null });
}

function showWho() {
  if (!login) return;
  const who = document.getElementById("who");
  who.textContent = login.user ? `${login.user} · project ${login.project}` : "token";
  who.hidden = false;
  document.getElementById("logout").hidden = false;
  clearTimeout(expiry);
  const ends = Date.parse(login.expires_at || "");
  if (Number.isFinite(ends)) {
    expiry = setTimeout(() => showLogin("Your token expired: log in again."),
      Math.min(Math.max(ends - Date.now(), 0), 2 ** 31 - 1));
  }
}

async function act(method, path, body, done) {
  const response = await call(path, {
    method,
    headers: { "Content-Type": "application/json" },
    body: body === null ? undefined : JSON.stringify(body),
  });
  if (response.status === 401) return;
  if (response.ok) {
    notice(done, true);
    return;
  }
  let reason = response.statusText;
  try {
    const fault = await response.json();
    reason = fault.faultstring || fault.detail || reason;
  } catch (_) { /* not JSON: keep the status text */ }
  notice(`Refused (${response.status}): ${reason}`, false);
}

function setWeight(pool, member, weight, done) {
  const path = `/v2/lbaas/pools/${pool.id}/members/${member.id}`;
  return act("PUT", path, { member: { weight } }, done);
}

function memberAction(pool, member) {
  const key = "lbaas-weight-" + member.id;
  if (member.weight === 0) {
    const before = Number(sessionStorage.getItem(key)) || 1;
    return el("button", {
      class: "enable",
      onclick: () => setWeight(pool, member, before, `Member ${member.address} re-enabled (weight ${before}).`),
    }, "Re-enable");
  }
  return el("button", {
    class: "drain",
    onclick: () => {
      sessionStorage.setItem(key, String(member.weight));
      return setWeight(pool, member, 0, `Member ${member.address} draining (weight 0).`);
    },
  }, "Drain");
}

function memberRow(pool, member) {
  return el("tr", {
    class: "member",
    "data-id": member.id,
    "data-operating-status": member.operating_status,
    "data-weight": String(member.weight),
  },
  el("td", {}, member.name || member.address),
  el("td", {}, `${member.address}:${member.protocol_port}`),
  el("td", { class: "weight" }, member.weight),
  el("td", {}, badge(member.operating_status), " ", badge(member.provisioning_status)),
  el("td", {}, memberAction(pool, member)));
}

function header(...names) {
  return el("thead", {}, el("tr", {}, ...names.map((name) => el("th", { scope: "col" }, name))));
}

function monitorLine(hm) {
  if (!hm) return el("p", { class: "monitor empty" }, "no health monitor");
  const target = hm.url_path ? ` ${hm.http_method || "GET"} ${hm.url_path} → ${hm.expected_codes || "200"}` : "";
  return el("p", { class: "monitor", "data-id": hm.id },
    `Monitor ${hm.type}${target} · every ${hm.delay}s, timeout ${hm.timeout}s, ` +
    `up after ${hm.max_retries}, down after ${hm.max_retries_down} `, badge(hm.operating_status));
}

function poolBlock(pool) {
  const rows = pool.members.map((member) => memberRow(pool, member));
  return el("div", { class: "pool", "data-id": pool.id },
    el("h3", {}, `Pool ${pool.name || pool.id.slice(0, 8)} · ${pool.protocol} · ${pool.lb_algorithm} `,
      badge(pool.operating_status)),
    monitorLine(pool.healthmonitor),
    rows.length
      ? el("table", { class: "members" },
        header("Member", "Address", "Weight", "Status", "Action"), el("tbody", {}, ...rows))
      : el("p", { class: "empty" }, "no members"));
}

function policyTarget(policy) {
  if (policy.action === "REDIRECT_TO_POOL") return `→ pool ${(policy.redirect_pool_id || "").slice(0, 8)}`;
  if (policy.action === "REDIRECT_TO_URL") return `→ ${policy.redirect_url}`;
  if (policy.action === "REDIRECT_PREFIX") return `→ ${policy.redirect_prefix}…`;
  return "";
}

function ruleText(rule) {
  const key = rule.key ? `[${rule.key}]` : "";
  return `${rule.invert ? "NOT " : ""}${rule.type}${key} ${rule.compare_type} "${rule.value}"`;
}

function policyList(listener) {
  const policies = listener.l7policies || [];
  if (!policies.length) return null;
  return el("ol", { class: "l7policies" }, ...policies.map((policy) =>
    el("li", { class: "l7policy", "data-id": policy.id },
      `${policy.name || "policy"} · ${policy.action} ${policyTarget(policy)} `, badge(policy.operating_status),
      el("ul", {}, ...(policy.rules.length ? policy.rules.map((rule) =>
        el("li", { class: "l7rule", "data-id": rule.id }, ruleText(rule)))
        : [el("li", { class: "empty" }, "no rules: never matches")])))));
}

const VIP_WORDS = { up: "VIP answers", down: "VIP not answering", unprobed: "" };

function vipMarker(state) {
  return el("span", { class: "vip-probe", "data-vip": state,
    title: "the agents' latest TCP probe of this VIP:port" }, VIP_WORDS[state]);
}

function listenerBlock(listener) {
  const state = probes.get(listener.id) || "unprobed";
  return el("div", { class: "listener", "data-id": listener.id, "data-vip": state },
    el("h3", {}, `Listener ${listener.protocol}:${listener.protocol_port} `,
      badge(listener.operating_status), " ", vipMarker(state)),
    el("canvas", { class: "traffic", "data-listener": listener.id, width: 300, height: 48,
      title: "new connections per second, last five minutes" }),
    policyList(listener));
}

// An amphora is only as healthy as the host it runs on: its own row says ALLOCATED
// until a failover moves it, while its host may already be DOWN.
function amphoraHealth(amphora) {
  if (amphora.status === "ERROR" || amphora.status === "FAILOVER_STOPPED") return "bad";
  if (amphora.host_status && amphora.host_status !== "UP") return "host-down";
  return "ok";
}

function amphoraRow(amphora) {
  const health = amphoraHealth(amphora);
  const host = el("td", { class: "host" }, `host ${amphora.host || "?"} `,
    amphora.host_status ? badge(amphora.host_status === "UP" ? "UP" : "HOST_" + amphora.host_status) : null);
  return el("tr", { class: "amphora", "data-id": amphora.id, "data-health": health,
    "data-host-status": amphora.host_status || "" },
    el("td", { class: "id" }, amphora.id.slice(0, 8)),
    el("td", {}, amphora.role || ""),
    el("td", {}, health === "host-down" ? badge("HOST_DOWN") : badge(amphora.status)),
    host,
    el("td", { class: "id" }, amphora.compute_id || ""));
}

function loadBalancerBlock(lb) {
  const failover = el("button", {
    class: "failover",
    onclick: () => act("PUT", `/v2/lbaas/loadbalancers/${lb.id}/failover`, null,
      `Failover of ${lb.name || lb.id} requested.`),
  }, "Failover");
  return el("section", { class: "lb", "data-id": lb.id, "data-provisioning-status": lb.provisioning_status },
    el("h2", {}, lb.name || "(no name)", el("span", { class: "id" }, lb.id),
      `VIP ${lb.vip_address || "-"}`, badge(lb.provisioning_status), badge(lb.operating_status), failover),
    lb.error ? el("div", { class: "error" }, `Last converge failed: ${lb.error}`) : null,
    el("div", { class: "columns" },
      el("div", {}, ...lb.listeners.map(listenerBlock)),
      el("div", {}, ...lb.pools.map(poolBlock)),
      el("div", {}, el("h3", {}, "Amphorae"),
        lb.amphorae.length ? el("table", { class: "amphorae" },
          header("Amphora", "Role", "Status", "Host", "Compute"), el("tbody", {}, ...lb.amphorae.map(amphoraRow)))
          : el("p", { class: "empty" }, "none"))));
}

// What the page drew last, and where each object sits in it, for the stream's "changes".
const owners = new Map();

function index(loadbalancers) {
  owners.clear();
  for (const lb of loadbalancers) {
    owners.set(lb.id, { lb, object: lb });
    for (const listener of lb.listeners) owners.set(listener.id, { lb, object: listener });
    for (const amphora of lb.amphorae) owners.set(amphora.id, { lb, object: amphora });
    for (const pool of lb.pools) {
      owners.set(pool.id, { lb, object: pool });
      for (const member of pool.members) owners.set(member.id, { lb, object: member });
    }
  }
}

// Only the load balancers a change touched are drawn again.
function applyChanges(changes) {
  const touched = new Set();
  for (const kind of ["loadbalancers", "listeners", "pools", "members", "amphorae"]) {
    for (const row of changes[kind] || []) {
      const found = owners.get(row.id);
      if (!found) continue;
      Object.assign(found.object, row);
      touched.add(found.lb);
    }
  }
  for (const [id, error] of Object.entries(changes.errors || {})) {
    const found = owners.get(id);
    if (!found) continue;
    found.lb.error = error;
    touched.add(found.lb);
  }
  for (const lb of touched) {
    const old = document.querySelector(`section.lb[data-id="${lb.id}"]`);
    if (!old) continue;
    const block = loadBalancerBlock(lb);
    old.replaceWith(block);
    block.querySelectorAll("canvas.traffic").forEach(draw);
  }
}

function render(loadbalancers) {
  index(loadbalancers);
  const main = document.getElementById("loadbalancers");
  main.replaceChildren(...loadbalancers.map(loadBalancerBlock));
  if (!loadbalancers.length) main.append(document.getElementById("empty").content.cloneNode(true));
  document.getElementById("count").textContent = `${loadbalancers.length} load balancer(s)`;
  document.querySelectorAll("canvas.traffic").forEach(draw);
}

function showProbe(id, counters) {
  const state = counters.vip_probes ? (counters.vip_answered ? "up" : "down") : "unprobed";
  if (state === "unprobed") probes.delete(id); else probes.set(id, state);
  const block = document.querySelector(`div.listener[data-id="${id}"]`);
  if (!block || block.dataset.vip === state) return;
  block.dataset.vip = state;
  block.querySelector(".vip-probe").replaceWith(vipMarker(state));
}

function record(at, listeners) {
  for (const [id, counters] of Object.entries(listeners)) {
    showProbe(id, counters);
    const series = samples.get(id) || [];
    series.push({ at, connections: counters.total_connections });
    while (series.length && series[0].at < at - WINDOW_SECONDS) series.shift();
    samples.set(id, series);
  }
  document.querySelectorAll("canvas.traffic").forEach(draw);
}

// Rates between consecutive samples, drawn right-aligned at "now".
function draw(canvas) {
  const series = samples.get(canvas.dataset.listener) || [];
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  if (series.length < 2) return;
  const now = series[series.length - 1].at;
  const rates = [];
  for (let i = 1; i < series.length; i++) {
    const dt = series[i].at - series[i - 1].at;
    if (dt > 0) rates.push({ at: series[i].at, rate: Math.max(0, (series[i].connections - series[i - 1].connections) / dt) });
  }
  const peak = Math.max(1, ...rates.map((r) => r.rate));
  canvas.dataset.peak = String(Math.max(0, ...rates.map((r) => r.rate))); // read by the tests
  ctx.strokeStyle = "#2a6fdb";
  ctx.beginPath();
  rates.forEach((r, i) => {
    const x = canvas.width * (1 - (now - r.at) / WINDOW_SECONDS);
    const y = canvas.height - 2 - (canvas.height - 4) * (r.rate / peak);
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  });
  ctx.stroke();
  ctx.fillStyle = "#556";
  ctx.fillText(`${rates[rates.length - 1].rate.toFixed(1)} conn/s (peak ${peak.toFixed(1)})`, 4, 12);
}

// One server-sent event block ("event: x\ndata: ...\n\n") to its handler.
function dispatch(block, on, state) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    if (colon === 0) continue; // a comment
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
    else if (field === "retry" && /^\d+$/.test(value)) state.retry = Number(value);
  }
  if (data.length && on[name]) on[name](data.join("\n"));
}

// The event stream read with fetch, which can send X-Auth-Token (EventSource cannot, and
// a token in the URL would land in access logs). It reconnects as EventSource does, after
// the server's "retry"; the server ends each stream after a while, so every reconnect
// shows the token to Keystone's validation again.
async function readEvents(signal, on) {
  const state = { retry: 1000 };
  while (!signal.aborted) {
    try {
      const response = await call("/dashboard/events",
        { headers: { Accept: "text/event-stream" }, cache: "no-store", signal });
      if (response.status === 401) return;
      if (response.status === 403) {
        on.lost();
        notice("Live updates refused (403): the token's roles no longer allow reading.");
        return;
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      on.open();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, end), on, state);
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (_) {
      if (signal.aborted) return;
    }
    on.lost();
    await new Promise((resolve) => setTimeout(resolve, state.retry));
  }
}

function listen() {
  const live = document.getElementById("live");
  if (stream) stream.abort();
  stream = new AbortController();
  readEvents(stream.signal, {
    open: () => { live.dataset.state = "live"; live.textContent = "live"; },
    lost: () => { live.dataset.state = "lost"; live.textContent = "reconnecting…"; },
    topology: (data) => render(JSON.parse(data)),
    changes: (data) => applyChanges(JSON.parse(data)),
    traffic: (data) => {
      const parsed = JSON.parse(data);
      record(parsed.at, parsed.listeners);
    },
  });
}

async function start() {
  const response = await call("/dashboard/topology", {});
  if (response.status === 401) return;
  if (!response.ok) {
    const fault = await response.json().catch(() => ({}));
    notice(`Cannot show load balancers (${response.status}): ${fault.faultstring || response.statusText}`);
    return;
  }
  const data = await response.json();
  showWho();
  render(data.loadbalancers);
  listen();
}

document.getElementById("login-password").addEventListener("submit", passwordLogin);
document.getElementById("login-token").addEventListener("submit", tokenLogin);
document.getElementById("logout").addEventListener("click", () => showLogin("Logged out."));
start();
