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
// lines, refs (branches and tags) named above the snapshot they point at.
function drawTimeline(container, snapshots) {
  if (!snapshots.length) { container.textContent = "No snapshots yet."; return; }
  const width = Math.max(container.clientWidth || 800, Math.min(snapshots.length * 28, 6000));
  const height = 120, pad = 40, y = 70;
  const times = snapshots.map((s) => s.ts);
  const first = Math.min(...times), last = Math.max(...times);
  const span = Math.max(last - first, 1);
  // equal spacing when commits are bunched in time; time-proportional otherwise
  const byTime = snapshots.length < 3 || span > snapshots.length * 1000;
  const xOf = (s, i) => pad + (width - 2 * pad) * (byTime ? (s.ts - first) / span : i / Math.max(snapshots.length - 1, 1));
  const svg = svgNode("svg", { width, height, role: "img", "aria-label": `${snapshots.length} snapshots` });
  svg.appendChild(svgNode("line", { x1: pad, x2: width - pad, y1: y, y2: y, class: "axis" }));
  const position = new Map();
  snapshots.forEach((s, i) => position.set(s.id, xOf(s, i)));
  snapshots.forEach((s) => {
    if (s.parent && position.has(s.parent)) {
      svg.appendChild(svgNode("path", {
        d: `M${position.get(s.parent)},${y} Q${(position.get(s.parent) + position.get(s.id)) / 2},${y - 18} ${position.get(s.id)},${y}`,
        fill: "none", stroke: "#9fb0c4",
      }));
    }
  });
  snapshots.forEach((s) => {
    const x = position.get(s.id);
    const dot = svgNode("circle", { cx: x, cy: y, r: 7, fill: OPERATION_COLORS[s.op] || "#6b7785",
      class: s.current ? "current" : "", "data-snapshot": s.id });
    dot.appendChild(svgNode("title", {}, `${s.id}\n${s.op}\n${new Date(s.ts).toISOString()}`));
    dot.addEventListener("click", () => { location.hash = `snapshot-${s.id}`; });
    svg.appendChild(dot);
    if (s.refs.length) svg.appendChild(svgNode("text", { x, y: y - 24, "text-anchor": "middle", class: "ref" }, s.refs.join(", ")));
  });
  svg.appendChild(svgNode("text", { x: pad, y: height - 12 }, new Date(first).toISOString().replace("T", " ").slice(0, 19)));
  svg.appendChild(svgNode("text", { x: width - pad, y: height - 12, "text-anchor": "end" },
    new Date(last).toISOString().replace("T", " ").slice(0, 19)));
  container.appendChild(svg);
  const legend = document.createElement("div");
  legend.className = "legend";
  for (const [op, color] of Object.entries(OPERATION_COLORS)) {
    const item = document.createElement("span");
    item.innerHTML = `<i style="background:${color}"></i>${op}`;
    legend.appendChild(item);
  }
  container.appendChild(legend);
}

function localTimes() {
  for (const cell of document.querySelectorAll("[data-ms]")) {
    const ms = Number(cell.dataset.ms);
    if (ms) { cell.title = cell.textContent; cell.textContent = new Date(ms).toLocaleString(); }
  }
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

document.addEventListener("DOMContentLoaded", () => {
  const timeline = document.getElementById("snapshot-timeline");
  if (timeline) drawTimeline(timeline, JSON.parse(document.getElementById("snapshot-data").textContent));
  localTimes();
  switches();
  tabs();
  confirmations();
});
