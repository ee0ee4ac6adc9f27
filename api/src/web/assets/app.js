// play's dashboard script: small, no dependencies, loaded from play itself
// (the Content-Security-Policy allows nothing else). Every page works
// without it; it adds live updates, the log viewer, countdowns and
// in-page checks of template variables. Text from tenants is only ever set
// with textContent or comes escaped in HTML rendered by the server.
"use strict";

// --- live regions -------------------------------------------------------
// An element with data-live="URL" is replaced by the same element rendered
// again at URL every data-interval ms (default 1000) while the page is
// visible; the server leaves data-live off once there is nothing left to
// follow (a Playground converged), which ends the polling.
function followLive(element) {
  const interval = Number(element.dataset.interval || 1000);
  let timer = null;
  const tick = async () => {
    timer = null;
    if (document.hidden) return;
    try {
      const answer = await fetch(element.dataset.live, { headers: { "Accept": "text/html" }, cache: "no-store" });
      if (answer.status === 404) {
        element.replaceChildren(Object.assign(document.createElement("p"), { textContent: "This is gone." }));
        return;
      }
      if (!answer.ok) { schedule(); return; }
      const doc = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = doc.getElementById(element.id);
      if (!fresh) { schedule(); return; }
      const focused = document.activeElement && document.activeElement.id;
      const adopted = document.importNode(fresh, true);
      element.replaceWith(adopted);
      start(adopted);
      if (focused) { const again = document.getElementById(focused); if (again) again.focus(); }
      if (adopted.dataset.live) { element = adopted; schedule(); }
    } catch (e) {
      schedule();
    }
  };
  const schedule = () => { if (!timer) timer = setTimeout(tick, interval); };
  document.addEventListener("visibilitychange", () => { if (!document.hidden && element.isConnected && element.dataset.live) schedule(); });
  schedule();
}

// --- countdowns -----------------------------------------------------------
function describeLeft(ms) {
  if (ms <= 0) return "expired";
  const s = Math.floor(ms / 1000), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  if (d > 0) return `${d}d ${h}h left`;
  if (h > 0) return `${h}h ${m}m left`;
  return `${m}m ${s % 60}s left`;
}
function tickCountdowns(root) {
  for (const t of root.querySelectorAll("time[data-countdown]")) {
    const at = Date.parse(t.getAttribute("datetime"));
    if (!Number.isNaN(at)) t.textContent = describeLeft(at - Date.now());
  }
}

// --- template variables ---------------------------------------------------
// data-regex holds the variable's declared /regex/ (searched, as the server
// does); the browser shows the message before the form is sent, and the
// server checks again.
function checkPatterns(root) {
  for (const input of root.querySelectorAll("input[data-regex]")) {
    let re = null;
    try { re = new RegExp(input.dataset.regex); } catch (e) { continue; }
    const check = () => {
      const ok = input.value === "" || re.test(input.value);
      input.setCustomValidity(ok ? "" : `must match /${input.dataset.regex}/`);
    };
    input.addEventListener("input", check);
    check();
  }
}

// --- the log viewer -------------------------------------------------------
// Lines arrive as Server-Sent Events from the API (the session's cookie
// goes with them). At most MAX_LINES are kept in the page: older ones are
// dropped, so a chatty service never freezes the tab. Rendering is batched
// with timers (which, unlike animation frames, also run in a background
// tab), so nothing piles up while the tab is hidden. Pausing stops the
// view, not the stream: lines received meanwhile (up to the same bound)
// appear on resume.
const MAX_LINES = 5000;
const SGR = /\x1b\[([0-9;]*)m/g;
const OTHER_ESCAPES = /\x1b\[[0-9;?]*[A-Za-ln-z]|\x1b[()][0-9A-B]|\x1b[=>]/g;

// What a terminal would show of a line with carriage returns: the text
// after the last one (a progress bar's final state). One event is one
// line of the log (the server splits at newlines), and an event stream
// itself ends a data line at a carriage return, so a "\n" inside an
// event's data was a "\r" in the log.
function lastFrame(line) {
  const parts = line.replace(/[\r\n]+$/, "").split(/[\r\n]/);
  return parts[parts.length - 1];
}

// A line as spans: ANSI colour and weight codes become classes (never
// inline styles), other escape sequences are dropped, text stays text.
function renderLine(text, state) {
  const line = document.createElement("span");
  line.className = "line";
  const clean = lastFrame(text).replace(OTHER_ESCAPES, "");
  let at = 0;
  const push = (chunk) => {
    if (!chunk) return;
    const span = document.createElement("span");
    if (state.size) span.className = [...state].map((c) => `ansi-${c}`).join(" ");
    span.textContent = chunk;
    line.appendChild(span);
  };
  for (const match of clean.matchAll(SGR)) {
    push(clean.slice(at, match.index));
    at = match.index + match[0].length;
    for (const code of (match[1] || "0").split(";").map(Number)) {
      if (code === 0) state.clear();
      else if (code === 22) { state.delete(1); state.delete(2); }
      else if (code === 39) { for (const c of [...state]) if ((c >= 30 && c <= 37) || (c >= 90 && c <= 97)) state.delete(c); }
      else if ((code >= 30 && code <= 37) || (code >= 90 && code <= 97)) {
        for (const c of [...state]) if ((c >= 30 && c <= 37) || (c >= 90 && c <= 97)) state.delete(c);
        state.add(code);
      } else if (code >= 1 && code <= 4) state.add(code);
    }
  }
  push(clean.slice(at));
  if (!line.childNodes.length) line.appendChild(document.createTextNode(""));
  return line;
}

function followLogs(view) {
  const status = document.getElementById("log-status");
  const toggle = document.getElementById("log-toggle");
  const pending = [];
  const sgr = new Set();
  let paused = false, flushTimer = null, source = null, last = null, reconnecting = false, retry = 1000;
  const say = (text) => { if (status) status.textContent = text; };
  const flush = () => {
    flushTimer = null;
    if (paused) return;
    const atBottom = view.scrollHeight - view.scrollTop - view.clientHeight < 40;
    const fragment = document.createDocumentFragment();
    for (const text of pending.splice(0)) fragment.appendChild(renderLine(text, sgr));
    view.appendChild(fragment);
    let extra = view.childElementCount - MAX_LINES;
    while (extra-- > 0) view.firstElementChild.remove();
    if (atBottom) view.scrollTop = view.scrollHeight;
  };
  const receive = (text) => {
    if (reconnecting) { reconnecting = false; if (text === last) return; }
    retry = 1000;
    last = text;
    pending.push(text);
    if (pending.length > MAX_LINES) pending.splice(0, pending.length - MAX_LINES);
    if (!flushTimer) flushTimer = setTimeout(flush, 50);
  };
  // Reconnects by hand from the last line shown (the browser's own
  // reconnect would ask for the whole tail again and repeat lines): a
  // second after lines came, backing off to 30 s while none come (a
  // finished job's log, a host that fails).
  const again = (why) => {
    source.close();
    say(`reconnecting (${why})`);
    reconnecting = true;
    setTimeout(() => open(1), retry);
    retry = Math.min(retry * 2, 30000);
  };
  const open = (tail) => {
    const url = new URL(view.dataset.stream, location.href);
    url.searchParams.set("tail", String(tail));
    source = new EventSource(url);
    source.onopen = () => say("following");
    source.onmessage = (event) => receive(event.data);
    source.addEventListener("end", (event) => again(event.data));
    source.onerror = () => again("the connection dropped");
  };
  if (toggle) {
    toggle.addEventListener("click", () => {
      paused = !paused;
      toggle.textContent = paused ? "Follow" : "Pause";
      toggle.setAttribute("aria-pressed", String(paused));
      say(paused ? "paused (lines are kept and shown on resume)" : "following");
      if (!paused) flush();
    });
  }
  open(Number(view.dataset.tail || 200));
}

// --- start ----------------------------------------------------------------
// Starts what `root`'s descendants ask for (a replaced live region is
// followed by its own loop, not started again here).
function start(root) {
  for (const element of root.querySelectorAll("[data-live]")) followLive(element);
  tickCountdowns(root);
  checkPatterns(root);
}

document.addEventListener("DOMContentLoaded", () => {
  start(document);
  setInterval(() => tickCountdowns(document), 1000);
  const log = document.getElementById("log");
  if (log && log.dataset.stream) followLogs(log);
});
