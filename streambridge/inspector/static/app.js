// streambridge inspector: the stream list (live over SSE) and one stream's two columns.
// Plain DOM, no build step; every stream byte reaches the page as text (never as HTML).
"use strict";

const token = new URLSearchParams(location.search).get("token");
const api = (path) => "api/" + path + (token ? (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : "");
const $ = (id) => document.getElementById(id);

// A column shows its first RENDER_LIMIT frames until asked for all (a long stream's tens of
// thousands of frames would make the page slow to draw); selecting a link past it shows all.
const RENDER_LIMIT = 2000;

const state = {
  showAll: { upstream: false, client: false },
  streams: new Map(), // id -> summary
  current: null, // id of the stream on show
  view: null, // its analysed view
  selected: null, // {side, index}
  refetch: null, // timer of a pending refresh of a live stream
  loading: false,
  lastLoadMs: 0, // how long the last stream view took: a live stream is refreshed no faster than twice that
};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const ms = (value) => (value === null || value === undefined ? "–" : value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(2)} s`);
const bytes = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);

// -- the stream list -------------------------------------------------------------------

function statusLabel(s) {
  if (s.live) return "live";
  return s.terminal ? `${s.status} · ${s.terminal}` : s.status;
}

function renderList() {
  const list = $("stream-list");
  const streams = [...state.streams.values()].sort((a, b) => b.started - a.started);
  $("stream-count").textContent = String(streams.length);
  $("no-streams").hidden = streams.length > 0;
  list.replaceChildren(
    ...streams.map((s) => {
      const faulty = s.faults.length > 0;
      const button = el(
        "button",
        {
          type: "button",
          class: "stream-item" + (s.id === state.current ? " current" : "") + (faulty ? " faulty" : "") + (s.live ? " live" : ""),
          "data-stream-id": s.id,
          "aria-current": s.id === state.current ? "true" : null,
          onclick: () => openStream(s.id, true),
        },
        el("span", { class: "route", text: `${s.route} ${s.path}` }),
        el("span", { class: "protocols", text: `${s.source} → ${s.target}${s.transport === "ws" ? " (WebSocket)" : ""}` }),
        el("span", { class: "status status-" + (s.live ? "live" : faulty ? "fault" : s.status), text: statusLabel(s) }),
        el(
          "span",
          { class: "numbers" },
          `${ms(s.duration_ms)} · TTFB ${ms(s.ttfb_ms)} · ${s.events_in} events in, ${s.frames_out} frames out · ${bytes(s.bytes_in)} in, ${bytes(s.bytes_out)} out`
        ),
        faulty ? el("span", { class: "fault-codes", text: "faults: " + s.faults.join(", ") }) : null
      );
      return el("li", {}, button);
    })
  );
}

function connect() {
  const feed = new EventSource(api("live"));
  feed.addEventListener("open", () => ($("feed").textContent = "live: updates as streams change"));
  feed.addEventListener("error", () => ($("feed").textContent = "disconnected: retrying…"));
  feed.addEventListener("streams", (e) => {
    state.streams = new Map(JSON.parse(e.data).map((s) => [s.id, s]));
    renderList();
    const wanted = decodeURIComponent(location.hash.slice(1));
    if (!state.current && wanted && state.streams.has(wanted)) openStream(wanted, false);
    else if (!state.current && state.streams.size === 1) openStream([...state.streams.keys()][0], false);
  });
  feed.addEventListener("stream", (e) => {
    const summary = JSON.parse(e.data);
    state.streams.set(summary.id, summary);
    renderList();
    if (summary.id === state.current) scheduleRefresh();
  });
}

function scheduleRefresh() {
  if (state.refetch) return;
  state.refetch = setTimeout(() => {
    state.refetch = null;
    if (state.current) loadStream(state.current, true);
  }, Math.max(300, 2 * state.lastLoadMs));
}

// -- one stream ------------------------------------------------------------------------

async function openStream(id, focus) {
  state.current = id;
  state.selected = null;
  state.showAll = { upstream: false, client: false };
  history.replaceState(null, "", "#" + encodeURIComponent(id));
  renderList();
  await loadStream(id, false);
  if (focus) $("stream").focus();
}

async function loadStream(id, keep) {
  if (state.loading) {
    scheduleRefresh();
    return;
  }
  state.loading = true;
  const began = performance.now();
  try {
    const response = await fetch(api("streams/" + encodeURIComponent(id)));
    if (!response.ok) {
      $("stream-title").textContent = response.status === 404 ? "That stream left the ring" : `Error ${response.status}`;
      $("stream-body").hidden = true;
      return;
    }
    const view = await response.json();
    if (state.current !== id) return;
    state.view = view;
    renderStream(keep);
  } finally {
    state.loading = false;
    state.lastLoadMs = performance.now() - began;
  }
}

function renderStream(keep) {
  const view = state.view;
  const s = view.summary;
  $("stream-title").textContent = `${s.route} ${s.path}: ${s.source} → ${s.target}`;
  $("stream-body").hidden = false;
  renderFacts(view);
  renderFaults(view.faults, s);
  renderFilter(view.kinds);
  for (const side of ["upstream", "client"]) {
    const name = side === "upstream" ? "download-upstream" : "download-client";
    $(name).href = api(`streams/${encodeURIComponent(s.id)}/${side}`);
  }
  $("upstream-protocol").textContent = `(${s.source}, ${view.facts.source_framing})`;
  $("client-protocol").textContent = `(${s.target}, ${view.facts.client_framing})`;
  $("upstream-count").textContent = String(view.upstream.frames.length);
  $("client-count").textContent = String(view.client.frames.length);
  $("upstream-chunks").textContent = String(view.upstream.chunks.length);
  $("client-writes").textContent = String(view.client.writes.length);
  renderColumns();
  $("assembled").textContent = view.assembled.text || "(no text)";
  $("reasoning-box").hidden = !view.assembled.reasoning;
  $("reasoning").textContent = view.assembled.reasoning;
  renderTimeline(view.timeline, view.faults);
  applyFilter();
  if (keep && state.selected) select(state.selected.side, state.selected.index, false);
  else renderDecoded();
}

function renderFacts(view) {
  const s = view.summary;
  const facts = [
    ["Status", statusLabel(s)],
    ["Started", new Date(s.started * 1000).toLocaleTimeString()],
    ["Duration", ms(s.duration_ms)],
    ["Time to first byte", s.recorded ? "recorded (no times)" : ms(s.ttfb_ms)],
    ["Events in", String(s.events_in)],
    ["Frames out", String(s.frames_out)],
    ["Bytes", `${bytes(s.bytes_in)} in, ${bytes(s.bytes_out)} out`],
    ["Upstream", view.facts.upstream || "–"],
  ];
  if (s.truncated) facts.push(["Capture", "truncated: the stream outgrew the inspector's per-stream limit"]);
  $("stream-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}

function renderFaults(faults, s) {
  const box = $("faults");
  box.hidden = faults.length === 0;
  box.replaceChildren(
    el("strong", { text: `Fault${faults.length > 1 ? "s" : ""}: ` }),
    ...faults.map((f) => el("span", { class: "fault-item", text: `${f.code} at ${ms(f.t_ms)}${f.detail ? " (" + f.detail + ")" : ""}` }))
  );
}

function renderFilter(kinds) {
  const select = $("kind-filter");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "", text: "all kinds" }), ...kinds.map((k) => el("option", { value: k, text: k })));
  select.value = kinds.includes(chosen) ? chosen : "";
}

function marksOf(frame) {
  return el("span", { class: "marks" }, ...frame.marks.map((m) => el("span", { class: "mark " + m, text: m })));
}

function renderColumns() {
  renderColumn("upstream", state.view.upstream.frames, state.view.upstream.chunks, "chunk");
  renderColumn("client", state.view.client.frames, state.view.client.writes, "write");
}

function showAll(side) {
  state.showAll[side] = true;
  renderColumns();
  applyFilter();
  if (state.selected) select(state.selected.side, state.selected.index, false);
}

function renderColumn(side, frames, pieces, pieceName) {
  const list = $(side + "-frames");
  const items = [];
  let lastPiece = -1;
  const shown = state.showAll[side] ? frames : frames.slice(0, RENDER_LIMIT);
  for (const frame of shown) {
    const [first, last] = frame.chunks;
    if (first !== lastPiece && pieces.length) {
      const piece = pieces[first];
      const label = `${pieceName} ${first + 1}` + (piece.t_ms === null ? "" : ` at ${ms(piece.t_ms)}`) + ` · ${bytes(piece.bytes)}` + (piece.origin && piece.origin !== "relay" ? ` · ${piece.origin}` : "");
      items.push(el("li", { class: "boundary", role: "separator", "aria-label": label, text: label }));
    }
    lastPiece = last;
    const split = last !== first ? ` (split over ${pieceName}s ${first + 1}–${last + 1})` : "";
    const label = `${side} frame ${frame.i + 1}: ${frame.wire}` + (frame.marks.length ? ", " + frame.marks.join(", ") : "") + split;
    const button = el(
      "button",
      {
        type: "button",
        class: "frame " + frame.marks.map((m) => "is-" + m).join(" "),
        "data-side": side,
        "data-index": frame.i,
        "data-kinds": frame.kinds.join(" "),
        "aria-pressed": "false",
        "aria-label": label,
        onclick: () => select(side, frame.i, true),
        onkeydown: (e) => step(e, side, frame.i),
      },
      el(
        "span",
        { class: "frame-head" },
        el("span", { class: "frame-no", text: `#${frame.i + 1}` }),
        el("span", { class: "frame-time", text: frame.t_ms === null ? "" : ms(frame.t_ms) }),
        el("span", { class: "frame-kind", text: frame.wire }),
        marksOf(frame),
        frame.links.length ? el("span", { class: "frame-links", text: (side === "upstream" ? "→ " : "← ") + frame.links.map((i) => "#" + (i + 1)).join(" ") }) : null,
        split ? el("span", { class: "split", text: split.trim() }) : null
      ),
      el("pre", { class: "raw", text: frame.raw.replace(/\s+$/, "") })
    );
    items.push(el("li", { class: "frame-item", "data-kinds": frame.kinds.join(" ") }, button));
  }
  if (shown.length < frames.length) {
    const more = `Show all ${frames.length} frames (${frames.length - shown.length} more)`;
    items.push(el("li", { class: "more" }, el("button", { type: "button", onclick: () => showAll(side), text: more })));
  }
  list.replaceChildren(...items);
}

function step(event, side, index) {
  const frames = state.view[side].frames;
  let next = null;
  if (event.key === "ArrowDown") next = index + 1;
  else if (event.key === "ArrowUp") next = index - 1;
  else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
    const other = side === "upstream" ? "client" : "upstream";
    const link = frames[index].links[0];
    if (link !== undefined) {
      event.preventDefault();
      select(other, link, true);
      frameButton(other, link).focus();
    }
    return;
  }
  if (next === null || next < 0 || next >= frames.length) return;
  event.preventDefault();
  select(side, next, true);
  frameButton(side, next).focus();
}

const frameButton = (side, index) => document.querySelector(`.frame[data-side="${side}"][data-index="${index}"]`);

function select(side, index, scroll) {
  const frames = state.view[side].frames;
  if (index >= frames.length) return;
  state.selected = { side, index };
  const other = side === "upstream" ? "client" : "upstream";
  const links = frames[index].links;
  const unshown = (s, i) => !state.showAll[s] && i >= RENDER_LIMIT;
  if (unshown(side, index) || links.some((i) => unshown(other, i))) {
    state.selected = { side, index };
    showAll(unshown(side, index) ? side : other); // (selects again once drawn)
    return;
  }
  for (const node of document.querySelectorAll(".frame.selected, .frame.linked")) {
    node.classList.remove("selected", "linked");
    node.setAttribute("aria-pressed", "false");
  }
  const chosen = frameButton(side, index);
  chosen.classList.add("selected");
  chosen.setAttribute("aria-pressed", "true");
  const linked = links.map((i) => frameButton(other, i)).filter(Boolean);
  for (const node of linked) node.classList.add("linked");
  if (scroll && linked.length) linked[0].scrollIntoView({ block: "nearest" });
  renderDecoded();
}

function decodedBlock(side, frame) {
  const title = `${side} frame #${frame.i + 1} (${frame.wire})` + (frame.origin !== "relay" ? ` · made by the ${frame.origin === "end" ? "end of input" : "proxy"}` : "");
  const body = frame.events.length ? JSON.stringify(frame.events, null, 2) : "(no event: " + (frame.marks.includes("heartbeat") ? "a heartbeat comment" : "structure only, or part of a carried event") + ")";
  return el("div", { class: "decoded-block" }, el("h4", { text: title }), el("pre", { text: body }));
}

function renderDecoded() {
  const box = $("decoded");
  const selected = state.selected;
  $("decoded-hint").hidden = Boolean(selected);
  if (!selected) {
    box.replaceChildren();
    return;
  }
  const other = selected.side === "upstream" ? "client" : "upstream";
  const frame = state.view[selected.side].frames[selected.index];
  const linked = frame.links.map((i) => state.view[other].frames[i]);
  const note = linked.length
    ? el("p", { class: "hint", text: `became ${linked.length} ${other} frame${linked.length > 1 ? "s" : ""}:` })
    : el("p", { class: "hint", text: selected.side === "client" ? "not from any upstream frame: the proxy or the end of the input made it" : "became no client frame of its own (held, merged into a later frame, or carried)" });
  box.replaceChildren(decodedBlock(selected.side, frame), note, ...linked.map((f) => decodedBlock(other, f)));
}

function applyFilter() {
  const kind = $("kind-filter").value;
  for (const item of document.querySelectorAll(".frame-item")) {
    item.hidden = Boolean(kind) && !item.dataset.kinds.split(" ").includes(kind);
  }
  for (const item of document.querySelectorAll(".boundary")) item.hidden = Boolean(kind);
}

// -- timeline --------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text) node.textContent = text;
  return node;
}

function renderTimeline(timeline, faults) {
  const box = $("timeline");
  const rate = $("rate");
  const gaps = $("gaps");
  if (timeline.recorded || !timeline.buckets.length) {
    box.replaceChildren(el("p", { class: "hint", text: timeline.recorded ? "A recorded transcript has no arrival times." : "Nothing arrived yet." }));
    rate.textContent = "";
    gaps.replaceChildren();
    return;
  }
  const width = 600;
  const height = 120;
  const buckets = timeline.buckets;
  const peak = Math.max(1, ...buckets.map((b) => b.events));
  const bar = width / buckets.length;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height + 18}`, role: "img", class: "chart", "aria-labelledby": "timeline-desc" });
  chart.append(svg("desc", { id: "timeline-desc" }, `Upstream events over ${ms(timeline.span_ms)}, in ${buckets.length} slices of ${ms(timeline.bucket_ms)}; darker: text deltas.`));
  buckets.forEach((b, i) => {
    const h = (b.events / peak) * height;
    const t = (b.text / peak) * height;
    if (h) chart.append(svg("rect", { x: i * bar + 0.5, y: height - h, width: bar - 1, height: h, class: "bar-events" }));
    if (t) chart.append(svg("rect", { x: i * bar + 0.5, y: height - t, width: bar - 1, height: t, class: "bar-text" }));
  });
  for (const f of faults) {
    const x = Math.min(width - 1, (f.t_ms / Math.max(1, timeline.span_ms)) * width);
    chart.append(svg("line", { x1: x, x2: x, y1: 0, y2: height, class: "fault-line" }));
  }
  chart.append(svg("text", { x: 0, y: height + 14, class: "axis" }, "0"));
  chart.append(svg("text", { x: width, y: height + 14, class: "axis", "text-anchor": "end" }, ms(timeline.span_ms)));
  box.replaceChildren(chart);
  rate.textContent = timeline.deltas_per_s === null ? "Fewer than two text deltas: no rate." : `${timeline.deltas_per_s} text deltas (tokens) a second while text streamed.`;
  gaps.replaceChildren(...timeline.gaps.filter((g) => g.ms > 0).map((g) => el("li", { text: `${ms(g.ms)} gap after ${ms(g.at_ms)}` })));
}

// -- copy ------------------------------------------------------------------------------

async function copySide(side) {
  const frames = state.view ? state.view[side].frames : [];
  const text = frames.map((f) => f.raw).join("");
  try {
    await navigator.clipboard.writeText(text);
    $("copied").textContent = `${side} copied (${frames.length} frames)`;
  } catch {
    $("copied").textContent = "the browser refused the clipboard: use the download instead";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("kind-filter").addEventListener("change", applyFilter);
  $("copy-upstream").addEventListener("click", () => copySide("upstream"));
  $("copy-client").addEventListener("click", () => copySide("client"));
  connect();
});
