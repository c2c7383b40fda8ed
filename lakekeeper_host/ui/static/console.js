// The console's only script: progressive enhancement (every page works without it).
"use strict";

const OPERATION_COLORS = { append: "#1f8a4c", overwrite: "#c27c0e", replace: "#6d4bc4", delete: "#c23b32" };
const SVG = "http://www.w3.org/2000/svg";

function svgNode(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// Snapshot timeline: one dot per snapshot on a time axis, coloured by operation, parent links as
// lines, refs (branches and tags) named above the snapshot they point at. Dots keep a minimum
// distance (commits seconds apart would cover each other): the axis stretches, and the drawing
// scrolls sideways, rather than letting them overlap; ref names alternate between two rows.
const DOT_RADIUS = 7, MIN_GAP = 2 * DOT_RADIUS + 6;

function timelinePositions(snapshots, width, pad) {
  const times = snapshots.map((s) => s.ts);
  const first = Math.min(...times), span = Math.max(Math.max(...times) - first, 1);
  const usable = width - 2 * pad;
  const xs = snapshots.map((s) => pad + (snapshots.length === 1 ? usable / 2 : usable * (s.ts - first) / span));
  for (let i = 1; i < xs.length; i++) xs[i] = Math.max(xs[i], xs[i - 1] + MIN_GAP);
  return xs;
}

function drawTimeline(container, snapshots) {
  if (!snapshots.length) { container.textContent = "No snapshots yet."; return; }
  snapshots = [...snapshots].sort((a, b) => a.ts - b.ts);
  const pad = 40, y = 78, height = 130;
  const available = Math.max(container.clientWidth || 800, 320);
  const xs = timelinePositions(snapshots, available, pad);
  const width = Math.max(available, xs[xs.length - 1] + pad);
  const svg = svgNode("svg", { width, height, role: "img", "aria-label": `${snapshots.length} snapshots` });
  svg.appendChild(svgNode("line", { x1: pad, x2: width - pad, y1: y, y2: y, class: "axis" }));
  const position = new Map();
  snapshots.forEach((s, i) => position.set(s.id, xs[i]));
  snapshots.forEach((s) => {
    if (s.parent && position.has(s.parent)) {
      const from = position.get(s.parent), to = position.get(s.id);
      svg.appendChild(svgNode("path", {
        d: `M${from},${y} Q${(from + to) / 2},${y - 18} ${to},${y}`, fill: "none", stroke: "#9fb0c4",
      }));
    }
  });
  let labelRow = 0, lastLabelEnd = -Infinity;
  snapshots.forEach((s) => {
    const x = position.get(s.id);
    const dot = svgNode("circle", { cx: x, cy: y, r: DOT_RADIUS, fill: OPERATION_COLORS[s.op] || "#6b7785",
      class: s.current ? "current" : "", "data-snapshot": s.id });
    dot.appendChild(svgNode("title", {}, `${s.id}\n${s.op}\n${utc(s.ts)}`));
    dot.addEventListener("click", () => { location.hash = `snapshot-${s.id}`; });
    svg.appendChild(dot);
    if (s.refs.length) {
      const text = s.refs.join(", ");
      const half = text.length * 3.6;
      const labelX = Math.min(Math.max(x, half + 4), width - half - 4);  // whole, also at either end
      labelRow = labelX - half < lastLabelEnd ? 1 - labelRow : 0;
      lastLabelEnd = Math.max(lastLabelEnd, labelX + half);
      svg.appendChild(svgNode("text", { x: labelX, y: y - 26 - 14 * labelRow, "text-anchor": "middle", class: "ref" },
        text));
    }
  });
  svg.appendChild(svgNode("text", { x: pad, y: height - 12 }, utc(snapshots[0].ts)));
  if (snapshots.length > 1) {
    svg.appendChild(svgNode("text", { x: width - pad, y: height - 12, "text-anchor": "end" },
      utc(snapshots[snapshots.length - 1].ts)));
  }
  container.appendChild(svg);
  const legend = document.createElement("div");
  legend.className = "legend";
  for (const [op, color] of Object.entries(OPERATION_COLORS)) {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = color;
    item.append(swatch, op);
    legend.appendChild(item);
  }
  container.appendChild(legend);
}

// The console's one timestamp format (as the server writes it): UTC, with the zone.
function utc(ms) {
  return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

// Show only the fieldsets of the chosen storage type / credential variant; hidden inputs are
// disabled so they are not submitted.
function switches() {
  for (const select of document.querySelectorAll("select[data-switch]")) {
    const apply = () => {
      for (const set of document.querySelectorAll(`fieldset[data-group="${select.dataset.switch}"]`)) {
        const on = set.dataset.value === select.value;
        set.hidden = !on;
        set.disabled = !on;
      }
    };
    select.addEventListener("change", apply);
    apply();
  }
}

function tabs() {
  for (const bar of document.querySelectorAll("[data-tabs]")) {
    const card = bar.parentElement;
    for (const button of bar.querySelectorAll("button")) {
      button.addEventListener("click", () => {
        bar.querySelectorAll("button").forEach((b) => b.classList.toggle("active", b === button));
        card.querySelectorAll("[data-panel]").forEach((p) => { p.hidden = p.dataset.panel !== button.dataset.tab; });
      });
    }
  }
  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      await navigator.clipboard.writeText(document.getElementById(button.dataset.copy).textContent);
      button.textContent = "Copied";
    });
  }
}

function confirmations() {
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => { if (!confirm(form.dataset.confirm)) event.preventDefault(); });
  }
}

// Suggestions under an input: ``fetchItems(text)`` answers [{label, detail, value | href}].
function suggest(input, list, fetchItems, choose) {
  let timer = null, asked = "";
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const text = input.value.trim();
      asked = text;
      if (!text) { list.hidden = true; return; }
      let items = [];
      try { items = await fetchItems(text); } catch (error) { items = []; }
      if (asked !== text) return;  // a newer question is on its way
      list.replaceChildren(...items.map((item) => {
        const entry = document.createElement("li");
        const link = document.createElement(item.href ? "a" : "button");
        if (item.href) link.href = item.href; else link.type = "button";
        link.textContent = item.label;
        if (item.detail) {
          const small = document.createElement("small");
          small.textContent = ` ${item.detail}`;
          link.appendChild(small);
        }
        if (!item.href) link.addEventListener("click", () => { choose(item); list.hidden = true; });
        entry.appendChild(link);
        return entry;
      }));
      list.hidden = !items.length;
    }, 180);
  });
  input.addEventListener("keydown", (event) => { if (event.key === "Escape") list.hidden = true; });
}

// The user and role picker: the typed text searches the API (users or roles), a choice fills in the id.
function pickers() {
  for (const picker of document.querySelectorAll("[data-picker]")) {
    const kind = picker.querySelector("select"), input = picker.querySelector("input");
    const list = picker.querySelector(".suggestions");
    suggest(input, list, async (text) => {
      const url = `${picker.dataset.picker}?kind=${encodeURIComponent(kind.value)}&q=${encodeURIComponent(text)}`;
      const answer = await fetch(url);
      const found = answer.ok ? await answer.json() : [];
      return found.map((p) => ({ label: p.name, detail: `${p.kind} ${p.id}${p.detail ? " · " + p.detail : ""}`,
        value: p.id }));
    }, (item) => { input.value = item.value; });
  }
}

// The sidebar's search box: matches as you type (Enter still opens the results page).
function searchSuggestions() {
  for (const input of document.querySelectorAll("input[data-suggest]")) {
    const list = input.parentElement.querySelector(".suggestions");
    suggest(input, list, async (text) => {
      const answer = await fetch(`${input.dataset.suggest}?format=json&q=${encodeURIComponent(text)}`);
      const found = answer.ok ? await answer.json() : { results: [] };
      return found.results.map((r) => ({ label: r.name, detail: r.kind, href: r.url }));
    }, () => {});
  }
}

// Data tab: choosing a branch clears the snapshot and the other way round.
function dataChoice() {
  const ref = document.getElementById("data-ref"), snapshot = document.getElementById("data-snapshot");
  if (!ref || !snapshot) return;
  snapshot.addEventListener("change", () => { if (snapshot.value) ref.value = ""; });
  ref.addEventListener("change", () => { if (ref.value) snapshot.value = ""; });
}

document.addEventListener("DOMContentLoaded", () => {
  const timeline = document.getElementById("snapshot-timeline");
  if (timeline) drawTimeline(timeline, JSON.parse(document.getElementById("snapshot-data").textContent));
  pickers();
  searchSuggestions();
  dataChoice();
  switches();
  tabs();
  confirmations();
});
