// nix-heft roots: draws the embedded data (one JSON document) as a treemap
// of the roots by what removing each frees, a detail panel with the command,
// a sortable table and the groups. Layout is d3-hierarchy's treemap; the
// rest is plain DOM, so the page works from disk with no network.
(function () {
  "use strict";
  const errBox = document.getElementById("js-errors");
  const errors = [];
  function recordError(msg) {
    errors.push(String(msg));
    errBox.textContent = errors.join("\n");
    errBox.hidden = false;
  }
  window.addEventListener("error", (e) => recordError(e.message));
  window.addEventListener("unhandledrejection", (e) => recordError(e.reason));

  const D = JSON.parse(document.getElementById("heft-data").textContent);
  const UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function iec(b) {
    if (b < 1024) return b + " B";
    let v = b, u = -1;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return v.toFixed(1) + " " + UNITS[u];
  }
  function age(s) {
    if (s === null || s === undefined) return "";
    const t = [[31536000, "y"], [2592000, "mo"], [86400, "d"], [3600, "h"], [60, "m"]];
    for (const [n, u] of t) if (s >= n) return Math.floor(s / n) + u;
    return Math.max(0, s) + "s";
  }
  function name(p) {
    const base = p.slice(p.lastIndexOf("/") + 1);
    return base.length > 33 && base[32] === "-" ? base.slice(33) : base;
  }
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  const bytesOf = (f) => (D.disk && f.disk_bytes !== undefined ? f.disk_bytes : f.nar_bytes);
  const sized = (f) => iec(f.nar_bytes) + (f.disk_bytes !== undefined ? " (" + iec(f.disk_bytes) + " on disk)" : "") + " in " + f.paths + " path" + (f.paths === 1 ? "" : "s");

  document.getElementById("summary").textContent =
    D.all_roots + " roots keep " + sized(D.live) + "; dead now: " + sized(D.dead) +
    (D.invalid ? " and " + D.invalid + " entries that are no valid path" : "") +
    " (keep-outputs = " + D.keep_outputs + ", keep-derivations = " + D.keep_derivations + ")" +
    (D.roots.length < D.all_roots ? "; the " + D.roots.length + " roots that free the most are in this page" : "");

  // ---- details -----------------------------------------------------------
  const detail = document.getElementById("detail");
  function dl(rows) {
    const d = el("dl", { class: "dl" });
    for (const [k, v] of rows) {
      if (v === undefined || v === null || v === "") continue;
      d.append(el("dt", {}, k), el("dd", { class: "mono" }, v));
    }
    return d;
  }
  function cmds(list) {
    const frag = document.createDocumentFragment();
    for (const c of list) frag.append(el("pre", { class: "command" }, "$ " + c));
    return frag;
  }
  function showRoot(i) {
    const r = D.roots[i];
    detail.replaceChildren(el("h2", {}, r.l));
    detail.append(dl([
      ["kind", r.k + (r.g ? " (" + r.g + ")" : "")],
      ["keeps", r.p],
      ["frees alone", sized(r.f)],
      ["roots of its path", r.s > 1 ? r.s + " (all of them free " + sized(r.w) + ")" : "1"],
      ["closure", r.c ? sized(r.c) : ""],
      ["age", age(r.a)],
    ]));
    if (r.x) detail.append(el("h3", {}, "To remove it"), cmds([r.x, D.gc_command]));
    else detail.append(el("p", { class: "hint" }, "Held by a running process: it goes when the process ends."));
    mark("r" + i);
  }
  function showShared(j) {
    const s = D.shared[j];
    detail.replaceChildren(el("h2", {}, s.n + " roots keep " + name(s.p)));
    detail.append(dl([["store path", s.p], ["all of them free", sized(s.f)]]));
    const ul = el("ul", { class: "plain mono" });
    for (const l of s.l) ul.append(el("li", {}, l));
    if (s.n > s.l.length) ul.append(el("li", {}, "… and " + (s.n - s.l.length) + " more"));
    detail.append(el("h3", {}, "Its roots (none frees anything alone)"), ul);
    if (s.x.length) detail.append(el("h3", {}, "To remove them all"), cmds(s.x.concat([D.gc_command])));
    mark("s" + j);
  }
  function showDead() {
    detail.replaceChildren(el("h2", {}, "Dead now"));
    detail.append(dl([["paths no root keeps", sized(D.dead)], ["entries that are no valid path", String(D.invalid)]]));
    detail.append(el("h3", {}, "The collector deletes them"), cmds([D.gc_command]));
    mark("dead");
  }

  // ---- treemap -------------------------------------------------------------
  const map = document.getElementById("map");
  const items = [];
  D.roots.forEach((r, i) => { if (bytesOf(r.f) > 0) items.push({ id: "r" + i, v: bytesOf(r.f), k: r.k, label: name(r.l) + " · " + name(r.p), show: () => showRoot(i) }); });
  D.shared.forEach((s, j) => { if (bytesOf(s.f) > 0) items.push({ id: "s" + j, v: bytesOf(s.f), k: "shared", label: s.n + " roots · " + name(s.p), show: () => showShared(j) }); });
  if (bytesOf(D.dead) > 0) items.push({ id: "dead", v: bytesOf(D.dead), k: "dead", label: "dead now", show: showDead });
  function mark(id) {
    for (const c of map.querySelectorAll(".cell.sel")) c.classList.remove("sel");
    const c = map.querySelector('[data-id="' + id + '"]');
    if (c) c.classList.add("sel");
  }
  function draw() {
    const w = map.clientWidth, h = map.clientHeight;
    map.replaceChildren();
    if (!items.length) { map.append(el("p", { class: "hint" }, "No root frees anything alone and nothing is dead.")); return; }
    const root = d3.hierarchy({ children: items }).sum((d) => d.v || 0).sort((a, b) => b.value - a.value);
    d3.treemap().size([w, h]).paddingInner(1).round(true)(root);
    for (const leaf of root.leaves()) {
      const it = leaf.data;
      const c = el("div", {
        role: "button", tabindex: "0",
        class: "cell k-" + it.k + (it.k === "shared" || it.k === "dead" ? " pat-" + it.k : ""),
        style: "left:" + leaf.x0 + "px;top:" + leaf.y0 + "px;width:" + Math.max(0, leaf.x1 - leaf.x0) + "px;height:" + Math.max(0, leaf.y1 - leaf.y0) + "px",
        "data-id": it.id, "data-bytes": String(it.v), title: it.label + ": " + iec(it.v),
      });
      if (leaf.x1 - leaf.x0 > 40 && leaf.y1 - leaf.y0 > 14) c.append(el("span", { class: "lbl" }, it.label + " " + iec(it.v)));
      c.addEventListener("click", it.show);
      c.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); it.show(); } });
      map.append(c);
    }
  }
  const legend = document.getElementById("legend");
  for (const [k, t] of [["link", "a link (result, gcroots)"], ["generation", "a profile's generation"], ["runtime", "held by a process"], ["temporary", "a temporary root"], ["shared", "several roots of one path"], ["dead", "dead now"]]) {
    const s = el("span"); s.append(el("span", { class: "sw k-" + k }), document.createTextNode(t)); legend.append(s);
  }

  // ---- table -----------------------------------------------------------------
  const cols = [
    ["frees", (r) => bytesOf(r.f), true, (r) => iec(bytesOf(r.f))],
    ["paths", (r) => r.f.paths, true, (r) => String(r.f.paths)],
    ["closure", (r) => (r.c ? r.c.nar_bytes : -1), true, (r) => (r.c ? iec(r.c.nar_bytes) : "")],
    ["age", (r) => (r.a === undefined ? -1 : r.a), true, (r) => age(r.a)],
    ["kind", (r) => r.k, false, (r) => r.k],
    ["root", (r) => r.l, false, (r) => r.l],
    ["store path", (r) => name(r.p), false, (r) => name(r.p)],
  ];
  let sortBy = 0, desc = true;
  const thead = document.querySelector("#table thead tr");
  const tbody = document.querySelector("#table tbody");
  cols.forEach(([t, , num], i) => {
    const b = el("button", {}, t);
    b.addEventListener("click", () => { desc = sortBy === i ? !desc : num; sortBy = i; table(); });
    const th = el("th", { class: num ? "num" : "" }); th.append(b); thead.append(th);
  });
  function table() {
    const rows = D.roots.map((r, i) => i);
    const key = cols[sortBy][1];
    rows.sort((a, b) => { const x = key(D.roots[a]), y = key(D.roots[b]); const c = x < y ? -1 : x > y ? 1 : 0; return desc ? -c : c; });
    tbody.replaceChildren();
    for (const i of rows) {
      const tr = el("tr", { tabindex: "0", "data-root": String(i) });
      cols.forEach(([, , num, text]) => tr.append(el("td", { class: num ? "num" : "" }, text(D.roots[i]))));
      tr.addEventListener("click", () => showRoot(i));
      tbody.append(tr);
    }
    document.getElementById("rowcount").textContent = D.roots.length + " of " + D.all_roots + " roots";
  }

  // ---- groups ----------------------------------------------------------------
  const gv = document.getElementById("view-groups");
  gv.append(el("p", { class: "hint" }, "Roots removed together: what they share counts once, what another root keeps not at all."));
  for (const g of D.groups) {
    const div = el("div", { class: "group" });
    div.append(el("h3", {}, g.t));
    div.append(el("p", { class: "freed" }, g.m + " roots: frees " + sized(g.f) + (g.collects ? ", and the collector it runs deletes what is dead now" : "")));
    div.append(cmds(g.c.concat(g.collects ? [] : [D.gc_command])));
    if (g.o) div.append(el("p", { class: "hint" }, "and " + g.o + " more links to remove (roots --json gives every command)"));
    gv.append(div);
  }

  // ---- tabs, hash and start ----------------------------------------------------
  const tabs = ["map", "table", "groups"];
  function view(name) {
    for (const t of tabs) {
      document.getElementById("tab-" + t).setAttribute("aria-selected", String(t === name));
      document.getElementById("view-" + t).hidden = t !== name;
    }
    if (name === "map") draw();
  }
  for (const t of tabs) document.getElementById("tab-" + t).addEventListener("click", () => view(t));
  table();
  draw();
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("view")) view(hash.get("view"));
  if (hash.get("click")) {
    const c = map.querySelector('[data-id="' + hash.get("click") + '"]');
    if (c) c.click(); else recordError("no cell " + hash.get("click"));
  }
  window.addEventListener("resize", () => { if (!document.getElementById("view-map").hidden) draw(); });
  document.body.setAttribute("data-ready", "true");
})();
