// nix-heft report: draws the embedded data (one JSON document) as a
// treemap over the dominator tree, a detail panel, a sortable table and the
// advice list. Layout is d3-hierarchy's treemap; everything else is plain
// DOM, so the page works from disk with no network.
(function () {
  "use strict";

  // Errors are kept in the page (and logged) so that a headless browser's
  // DOM dump shows them.
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
  const P = D.paths;
  const N = P.length;
  const UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  const VERDICTS = ["root", "runtime", "unknown", "build", "docs", "dead", "none"];
  const VERDICT_TEXT = {
    root: "a root",
    runtime: "runtime: a program uses it",
    unknown: "unknown: could be either",
    build: "build: only builds use it",
    docs: "docs: only documentation mentions it",
    dead: "dead: nothing uses it",
    none: "no evidence read",
  };
  const KINDS = ["out", "lib", "bin", "dev", "doc", "man", "source", "static", "debug", "drv"];

  // ---- derived indices -------------------------------------------------
  const referrers = Array.from({ length: N }, () => []);
  const kids = Array.from({ length: N }, () => []);
  const tops = [];
  P.forEach((p, i) => {
    p.r.forEach((t) => referrers[t].push(i));
    (p.d < 0 ? tops : kids[p.d]).push(i);
  });
  const byAdded = (a, b) => P[b].a - P[a].a || (P[a].n < P[b].n ? -1 : 1);
  tops.sort(byAdded);
  kids.forEach((k) => k.sort(byAdded));
  const edgeAt = new Map();
  D.edges.forEach((e) => edgeAt.set(e.from + ">" + e.to, e));
  const adviceOf = Array.from({ length: N }, () => []);
  D.advice.forEach((a, ai) => a.touches.forEach((t) => adviceOf[t].push(ai)));
  const isRoot = new Uint8Array(N);
  D.roots.forEach((r) => (isRoot[r] = 1));
  const noEvidence = D.evidence_state === "unavailable";
  // report --derivation: the paths are derivations and sources, a
  // derivation's size its outputs' where known; those unknown are listed.
  const BG = D.build_graph || null;
  // report --diff: the page is AFTER's closure; these paths are new since
  // BEFORE (with why), and BEFORE's paths that left are listed apart.
  const DF = D.diff || null;
  const addedWhy = new Map();
  if (DF) DF.added.forEach((a) => addedWhy.set(a.i, a));
  const isNew = (i) => addedWhy.has(i);
  // New since BEFORE: "added" (new), "rebuilt" (a path of the same name
  // left: another hash of the same package and version) or "updated"
  // (another version of a package BEFORE had), as the report says.
  const changeOf = (i) => (isNew(i) ? addedWhy.get(i).change || "added" : "same");
  const CHANGE_TEXT = {
    added: "added: new since BEFORE",
    rebuilt: "rebuilt: same name and version as a path of BEFORE, another hash",
    updated: "updated: another version of a package of BEFORE",
    same: "unchanged: in BEFORE's closure too",
    removed: "removed: in BEFORE's closure only",
  };
  // Display names of every path the page names (its own, BEFORE's roots,
  // what left), as the report made them: a name shown twice has its hash.
  const shownName = new Map();
  P.forEach((p) => shownName.set(p.p, p.n));
  if (DF) {
    DF.removed.forEach((r) => shownName.set(r.path, r.name));
    DF.before.forEach((b, k) => shownName.set(b, DF.before_names[k]));
  }
  const nameOfAny = (path) => shownName.get(path) || baseName(path);

  // ---- formatting ------------------------------------------------------
  // The same text as nix-heft's units::iec: the unit chosen with the same
  // floating-point test, the tenths rounded half to even from the exact
  // value, as Rust's formatter does.
  function iec(b) {
    if (b < 1024) return b + " B";
    let v = b / 1024;
    let u = 0;
    while (Math.round(v * 10) >= 10240 && u + 1 < UNITS.length) {
      v /= 1024;
      u += 1;
    }
    const num = BigInt(b) * 10n;
    const den = 1n << BigInt(10 * (u + 1));
    let q = num / den;
    const r2 = (num % den) * 2n;
    if (r2 > den || (r2 === den && q % 2n === 1n)) q += 1n;
    return (q / 10n).toString() + "." + (q % 10n).toString() + " " + UNITS[u];
  }
  function pct(part, whole) {
    return whole > 0 ? ((100 * part) / whole).toFixed(1) + "%" : "-";
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
        else e.setAttribute(k, v === true ? "" : v);
      }
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  function colourOf(i) {
    if (colourBy === "change") return "var(--" + changeOf(i) + ")";
    return colourBy === "kind" ? "var(--k-" + P[i].k + ")" : "var(--" + P[i].v + ")";
  }
  function verdictBadge(v) {
    const name = v || "none";
    return el("span", {
      class: "verdict pat-" + name,
      style: "background-color: var(--" + name + ")",
      text: name,
      title: VERDICT_TEXT[name] || name,
    });
  }
  function changeBadge(c) {
    return el("span", {
      class: "change pat-" + c,
      style: "background-color: var(--" + c + ")",
      text: c === "same" ? "unchanged" : c,
      title: CHANGE_TEXT[c],
    });
  }
  function iecDelta(d) {
    return (d < 0 ? "-" : "+") + iec(Math.abs(d));
  }
  // A store path's name without its directory and hash.
  function baseName(p) {
    const b = p.slice(p.lastIndexOf("/") + 1);
    return b.slice(b.indexOf("-") + 1);
  }
  function pathLink(i, label) {
    return el("button", {
      class: "linkish",
      type: "button",
      "data-select": P[i].p,
      text: label || P[i].n,
      title: P[i].p,
      onclick: () => select(i, true),
    });
  }
  async function copyText(text, button) {
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(text);
        ok = true;
      }
    } catch (_) {
      ok = false;
    }
    if (!ok) {
      // Fallback for pages opened where the clipboard API is refused.
      const ta = el("textarea", { style: "position:fixed;left:-9999px" });
      ta.value = text;
      document.body.append(ta);
      ta.select();
      try {
        ok = document.execCommand("copy");
      } catch (_) {
        ok = false;
      }
      ta.remove();
    }
    if (button) {
      const old = button.textContent;
      button.textContent = ok ? "Copied" : "Select and copy by hand";
      setTimeout(() => (button.textContent = old), 1500);
    }
  }
  // One word as a POSIX shell reads it back: as it is when it holds no
  // character the shell treats specially, else in single quotes.
  function shellWord(w) {
    return /^[A-Za-z0-9_@%+=:,.\/-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
  }
  function copyButton(text, label) {
    const b = el("button", { type: "button", class: "copy", text: label || "Copy" });
    b.addEventListener("click", () => copyText(text, b));
    return b;
  }

  // ---- state -----------------------------------------------------------
  let zoom = -1; // -1 = the virtual root over all roots
  let selected = -1;
  let colourBy = DF ? "change" : "verdict";
  const mapEl = document.getElementById("map");
  const searchEl = document.getElementById("search");
  const detailEl = document.getElementById("detail");

  // ---- summary and legend ------------------------------------------------
  document.getElementById("summary").textContent =
    (BG ? "Build graph: " : "") +
    D.roots.length + " root" + (D.roots.length === 1 ? "" : "s") + ", " +
    N + (BG ? " derivations and sources, build closure " : " paths, closure ") + iec(D.closure_size) +
    (BG ? " (a derivation counts its outputs' sizes)" +
      (BG.unknown_outputs.length ? "; " + BG.unknown_outputs.length +
        " derivation(s) with outputs of unknown size, counted as 0 (listed under Problems)" : "") : "") +
    "; evidence " + D.evidence_state +
    " (" + D.source + ")" +
    (D.traces ? "; traced by " + D.traces : "") +
    (DF ? "; since " + DF.before.map(nameOfAny).join(", ") + ": closure " + iec(DF.closure_size_before) +
      " → " + iec(D.closure_size) + " (" + iecDelta(D.closure_size - DF.closure_size_before) + "), " +
      DF.added.length + " paths added, " + DF.removed.length + " removed" : "") +
    "; " + D.generator;
  const colourEl = document.getElementById("colour");
  if (DF) {
    colourEl.prepend(el("option", { value: "change", text: "change since BEFORE" }));
    colourEl.value = "change";
  }

  function drawLegend() {
    const lg = document.getElementById("legend");
    lg.replaceChildren();
    if (DF) drawChangeLegend(lg);
    if (colourBy === "change") return;
    const items = colourBy === "kind" ? KINDS.filter((k) => P.some((p) => p.k === k)) : VERDICTS;
    lg.append(el("strong", { text: colourBy === "kind" ? "Output kind:" : "Verdict of the edge holding it:" }));
    for (const k of items) {
      const sw = el("span", {
        class: "sw" + (colourBy === "kind" ? "" : " pat-" + k),
        style: "background-color: var(--" + (colourBy === "kind" ? "k-" : "") + k + ")",
      });
      lg.append(el("span", { "data-legend": k }, sw, colourBy === "kind" ? k : VERDICT_TEXT[k]));
    }
  }

  function drawChangeLegend(lg) {
    if (colourBy === "change") {
      lg.append(el("strong", { text: "Change since BEFORE:" }));
      for (const k of ["added", "rebuilt", "updated", "same"]) {
        const of = DF.added.filter((a) => (a.change || "added") === k);
        if (of.length === 0 && k !== "added" && k !== "same") continue;
        const bytes = of.reduce((t, a) => t + P[a.i].s, 0);
        const sw = el("span", { class: "sw pat-" + k, style: "background-color: var(--" + k + ")" });
        lg.append(el("span", { "data-legend": k }, sw, CHANGE_TEXT[k] +
          (k !== "same" ? " (" + of.length + " paths, " + iec(bytes) + ")" : "")));
      }
    } else {
      lg.append(el("span", { "data-legend": "added" }, "“+” before a name: new since BEFORE."));
    }
    // What left cannot be drawn in AFTER's map: named here, in full in
    // the Changes tab.
    const removedBytes = DF.removed.reduce((t, r) => t + r.nar_size, 0);
    const SHOWN = 12;
    const names = DF.removed.slice(0, SHOWN).map((r) => r.name + " (" + iec(r.nar_size) + ")").join(", ");
    lg.append(el("span", { class: "removed-list", "data-legend": "removed" },
      el("span", { class: "sw pat-removed", style: "background-color: var(--removed)" }),
      "Removed since BEFORE, not drawn: " + DF.removed.length + " paths, " + iec(removedBytes) +
        (names ? ": " + names + (DF.removed.length > SHOWN ? ", …" : "") : "") + " ",
      el("button", { type: "button", class: "linkish", text: "list in Changes", onclick: () => showTab("changes", true) })));
  }
  // Why a path of the page is new since BEFORE, as DOM nodes.
  function addedWhyNodes(i) {
    const a = addedWhy.get(i);
    if (a.edge === "root") return ["new since BEFORE: a root"];
    if (a.referrer === undefined) return ["new since BEFORE"];
    if (a.edge === "renamed") {
      return ["new since BEFORE: " + (a.replaces.length ? "replaces " + a.replaces.map(nameOfAny).join(", ") + "; " : ""),
        pathLink(a.referrer), " references it as before"];
    }
    const e = edgeAt.get(a.referrer + ">" + i);
    return ["new since BEFORE: new edge from ", pathLink(a.referrer), " ", verdictBadge(e ? e.verdict : null)];
  }
  function removedWhyText(r) {
    if (r.edge === "root") return "was a root";
    const by = r.referrer ? nameOfAny(r.referrer) : "?";
    if (r.edge === "renamed") {
      return (r.replaced_by.length ? "replaced by " + r.replaced_by.map((j) => P[j].n).join(", ") + "; " : "") +
        by + " references it as before";
    }
    if (r.left_chain && r.left_chain.length > 1) {
      // Its referrer left too: it went with the chain, not because an
      // edge vanished from a referrer that stayed.
      return "left with " + r.left_chain[r.left_chain.length - 2] + " (" + r.left_chain.join(" → ") + ")";
    }
    return by + " no longer references it" + (r.unavailable
      ? " (BEFORE's files were not read: no file contents there, or --no-evidence)"
      : r.held_by ? " (held before by " + r.held_by + ")" : " (registered, but no occurrence found)");
  }

  // ---- labels --------------------------------------------------------------
  // A name shortened to `w` characters keeping the part that tells it
  // apart (nix-heft's report::names: `shorten` and `Shown::fit`): "gfx942"
  // of rocblas-tensile-gfx942-5.7.1 stays, a repeated name keeps its hash.
  function middle(t, w) {
    if (t.length <= w) return t;
    if (w <= 0) return "";
    const keep = w - 1;
    const h = Math.floor(keep / 2);
    return t.slice(0, h) + "…" + t.slice(t.length - (keep - h));
  }
  function shortenText(t, ks, ke, w) {
    const n = t.length;
    if (n <= w) return t;
    if (w <= 0) return "";
    ke = Math.min(ke, n);
    if ((ks === 0 && ke >= n) || ks >= ke) return middle(t, w);
    const tail = n - ks;
    if (tail < w) return t.slice(0, w - 1 - tail) + "…" + t.slice(ks);
    const before = ks > 0 ? 1 : 0;
    if (w > before + 1 && ke - ks < w - before) return (before ? "…" : "") + t.slice(ks, ks + (w - before - 1)) + "…";
    return middle(t.slice(ks, ke), w);
  }
  function shortName(p, w) {
    const t = p.n, hl = p.kh || 0, ks = p.ks[0], ke = p.ks[1];
    if (t.length <= w || hl === 0 || w < hl + 4) return shortenText(t, ks, ke, w);
    const n = t.length - hl;
    const nw = w - hl;
    const name = t.slice(0, n);
    const s = ks === 0 && ke >= n
      ? (name.length <= nw ? name : name.slice(0, nw - 1) + "…")
      : shortenText(name, ks, ke, nw);
    return s + t.slice(n);
  }
  let measureCtx = null;
  function textWidth(t) {
    if (!measureCtx) {
      const probe = el("span", { class: "lbl", text: "x" });
      mapEl.append(probe);
      const st = getComputedStyle(probe);
      measureCtx = document.createElement("canvas").getContext("2d");
      measureCtx.font = st.fontStyle + " " + st.fontWeight + " " + st.fontSize + " " + st.fontFamily;
      probe.remove();
    }
    return measureCtx.measureText(t).width;
  }
  // The label of a cell `px` wide: name, size and tag when they fit; else
  // the name shortened (never below the part that tells it apart) until it
  // fits with the size, else alone; CSS cuts what still does not fit.
  function fitLabel(p, pre, size, tag, px) {
    const min = Math.min(p.n.length, p.ks[1] - p.ks[0] + (p.kh || 0) + 2);
    if (textWidth(pre + p.n + size + tag) <= px) return pre + p.n + size + tag;
    for (const rest of [size, ""]) {
      for (let k = p.n.length; k >= min; k--) {
        const t = pre + shortName(p, k) + rest;
        if (textWidth(t) <= px) return t;
      }
    }
    return pre + shortName(p, min) + size + tag;
  }

  // ---- treemap -----------------------------------------------------------
  const MAX_DEPTH = 3;
  function subtree(i, depth) {
    const c = i < 0 ? tops : kids[i];
    const node = { i: i };
    if (depth < MAX_DEPTH && c.length) {
      node.children = c.map((j) => subtree(j, depth + 1));
      node.own = i < 0 ? 0 : P[i].s;
    } else {
      node.own = i < 0 ? D.closure_size : P[i].a;
    }
    return node;
  }
  function crumbs() {
    const nav = document.getElementById("crumbs");
    nav.replaceChildren();
    const chain = [];
    for (let i = zoom; i >= 0; i = P[i].d) chain.unshift(i);
    nav.append(
      el("button", {
        type: "button",
        text: "All roots (" + iec(D.closure_size) + ")",
        onclick: () => zoomTo(-1),
        "aria-current": zoom < 0 ? "page" : null,
      }),
    );
    chain.forEach((i, k) => {
      nav.append(el("span", { class: "sep", text: "›", "aria-hidden": "true" }));
      nav.append(
        el("button", {
          type: "button",
          text: P[i].n + " (" + iec(P[i].a) + ")",
          title: P[i].p,
          onclick: () => zoomTo(i),
          "aria-current": k === chain.length - 1 ? "page" : null,
        }),
      );
    });
  }
  function drawMap() {
    crumbs();
    const W = mapEl.clientWidth || 800;
    const H = mapEl.clientHeight || 500;
    const root = d3
      .hierarchy(subtree(zoom, 0))
      .sum((d) => d.own)
      .sort((a, b) => b.value - a.value);
    d3.treemap().size([W, H]).paddingOuter(2).paddingTop(15).paddingInner(1).round(true)(root);
    const frag = document.createDocumentFragment();
    const query = searchEl.value.trim().toLowerCase();
    for (const d of root.descendants()) {
      if (d.depth === 0) continue;
      const w = d.x1 - d.x0;
      const h = d.y1 - d.y0;
      if (w < 3 || h < 3) continue;
      const i = d.data.i;
      const p = P[i];
      const fresh = isNew(i);
      const change = changeOf(i);
      const tag = colourBy === "change" ? (fresh ? change : "unchanged") : colourBy === "kind" ? p.k : p.v;
      const pre = change === "added" ? "+ " : change === "same" ? "" : "↻ ";
      const label = fitLabel(p, pre, " " + iec(p.a), " [" + tag + "]", w - 6);
      const cell = el("div", {
        role: "button",
        tabindex: "0",
        class: "cell pat-" + (colourBy === "change" ? changeOf(i) : colourBy === "kind" ? "none-k" : p.v) +
          (fresh ? " is-" + change : "") +
          (i === selected ? " sel" : "") + (query && p.n.toLowerCase().includes(query) ? " hit" : ""),
        style: "left:" + d.x0 + "px;top:" + d.y0 + "px;width:" + w + "px;height:" + h + "px;background-color:" + colourOf(i),
        "data-path": p.p,
        "data-added": p.a,
        "data-change": DF ? changeOf(i) : null,
        "aria-label": p.n + (fresh ? ", " + CHANGE_TEXT[change] : "") + ", added " + iec(p.a) + ", self " + iec(p.s) +
          ", closure " + iec(p.c) + ", " + (colourBy === "kind" ? "kind " + p.k : "verdict " + p.v) +
          (kids[i].length ? ", contains " + kids[i].length + " paths" : ""),
        title: p.p + "\nadded " + iec(p.a) + " · self " + iec(p.s) + " · closure " + iec(p.c) + " · " + VERDICT_TEXT[p.v] +
          (DF ? "\n" + CHANGE_TEXT[changeOf(i)] : ""),
      });
      if (w > 28 && h > 11) cell.append(el("span", { class: "lbl", text: label }));
      cell.addEventListener("mouseenter", () => showTip(i, cell));
      cell.addEventListener("focus", () => showTip(i, cell));
      cell.addEventListener("mouseleave", hideTip);
      cell.addEventListener("blur", hideTip);
      const activate = (ev) => {
        ev.stopPropagation();
        select(i, false);
        if (kids[i].length) zoomTo(i);
        const again = mapEl.querySelector('[data-path="' + CSS.escape(p.p) + '"]');
        if (ev.type === "keydown") (again || mapEl.querySelector(".cell") || mapEl).focus();
      };
      cell.addEventListener("click", activate);
      cell.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); activate(ev); }
      });
      frag.append(cell);
    }
    frag.append(tipEl);
    mapEl.replaceChildren(frag);
    // Redrawn under a pointer that did not move (a resize, a zoom): the
    // label stays with its path while its cell is drawn.
    const again = tipFor >= 0 && mapEl.querySelector('[data-path="' + CSS.escape(P[tipFor].p) + '"]');
    if (again) showTip(tipFor, again);
    else hideTip();
  }
  // The hover label: a small cell's label is cut or missing ("…s…"), so
  // its name and size are said beside the pointer, inside the map.
  const tipEl = el("div", { id: "map-tip", role: "tooltip", hidden: true });
  let tipFor = -1;
  function showTip(i, cell) {
    tipFor = i;
    const p = P[i];
    const change = DF && isNew(i) ? " · " + CHANGE_TEXT[changeOf(i)] : "";
    tipEl.replaceChildren(el("strong", { text: p.n }), " " + iec(p.a) + " added · " + VERDICT_TEXT[p.v] + change);
    tipEl.hidden = false;
    const W = mapEl.clientWidth || 800;
    const x = Math.min(cell.offsetLeft, Math.max(0, W - 320));
    const below = cell.offsetTop + cell.offsetHeight + 2;
    const y = below + 40 > (mapEl.clientHeight || 500) ? Math.max(0, cell.offsetTop - 40) : below;
    tipEl.style.left = x + "px";
    tipEl.style.top = y + "px";
    cell.setAttribute("aria-describedby", "map-tip");
  }
  function hideTip() {
    tipFor = -1;
    tipEl.hidden = true;
  }
  function zoomTo(i) {
    zoom = i;
    drawMap();
    writeHash();
  }
  mapEl.addEventListener("keydown", (ev) => {
    if (ev.key === "Backspace" || ev.key === "u") {
      ev.preventDefault();
      if (zoom >= 0) zoomTo(P[zoom].d);
    }
  });
  new ResizeObserver(() => drawMap()).observe(mapEl);

  // ---- details -----------------------------------------------------------
  // How strongly an edge holds its reference, as `why` ranks it: runtime
  // first, an edge without evidence counted as unknown, dead last.
  const RANK = { runtime: 0, unknown: 1, build: 2, docs: 3, dead: 4 };
  function edgeRank(from, to) {
    const e = edgeAt.get(from + ">" + to);
    const r = e && e.verdict ? RANK[e.verdict] : undefined;
    return r === undefined ? 1 : r;
  }
  function strongestChain(i) {
    // The chain `why` and `check` give: the one whose weakest edge is
    // strongest, the shortest among those. Breadth-first from the path up
    // its referrers, over edges no weaker than each level in turn, so a
    // dead RUNPATH entry from the root is never shown as the reason when a
    // runtime chain keeps the path.
    for (let level = 0; level <= 4; level++) {
      const prev = new Int32Array(N).fill(-2);
      prev[i] = -1;
      const queue = [i];
      for (let h = 0; h < queue.length; h++) {
        const v = queue[h];
        if (isRoot[v]) {
          const chain = [];
          for (let x = v; x !== -1; x = prev[x]) chain.push(x);
          return chain;
        }
        for (const r of referrers[v]) {
          if (prev[r] === -2 && edgeRank(r, v) <= level) {
            prev[r] = v;
            queue.push(r);
          }
        }
      }
    }
    return [i];
  }
  function evidenceList(e) {
    const ul = el("ul", { class: "plain" });
    // The holds grouped as every command shows them, then the holds.
    for (const g of e.g || []) ul.append(el("li", { class: "ev-group", text: g }));
    for (const x of e.evidence || []) {
      ul.append(
        el(
          "li",
          { class: "ev" },
          el("code", { text: x.f || "(the path itself)" }),
          " ",
          el("span", { text: x.k }),
          x.l ? el("span", { text: " line " + x.l }) : el("span", { text: " offset " + x.o }),
          " ",
          verdictBadge(x.v),
          x.t ? el("span", { class: "traced", "data-traced": x.t, text: "traced: " + x.t }) : null,
          " " + x.r,
          el("br"),
          el("code", { class: "mono", text: x.x }),
        ),
      );
    }
    if (e.more) ul.append(el("li", { class: "ev", text: "… and " + e.more + " more (nix-heft refs --evidence lists all)" }));
    return ul;
  }
  function edgeBlock(from, to, open) {
    const e = edgeAt.get(from + ">" + to);
    const head = [pathLink(from), " → ", pathLink(to), " "];
    if (!e) {
      return el("div", { class: "edge", "data-edge": P[from].n + ">" + P[to].n }, ...head,
        el("span", { text: noEvidence ? "evidence unavailable (no file contents)" : "not read" }));
    }
    const kinds = Object.entries(e.kinds || {}).map(([k, n]) => k + " ×" + n).join(", ");
    const summary = el("summary", null, ...head, verdictBadge(e.verdict),
      e.traced ? el("span", { class: "traced", text: "traced: " + e.traced }) : null,
      " " + (e.reason || "registered, but no file holds it") + (kinds ? "; " + kinds + "; " + e.files + " file" + (e.files === 1 ? "" : "s") : ""));
    return el("details", { class: "edge", open: open, "data-edge": P[from].n + ">" + P[to].n }, summary, evidenceList(e));
  }
  function select(i, reveal, quiet) {
    selected = i;
    if (reveal && zoom !== P[i].d && !(zoom === i && kids[i].length)) {
      zoom = P[i].d;
    }
    drawMap();
    if (!quiet) writeHash();
    const p = P[i];
    const chain = strongestChain(i);
    // `why ROOT ROOT` answers nothing: a root is offered no command.
    const whyCmd = chain.length > 1
      ? (D.why_command || ["nix-heft", "why"]).concat([P[chain[0]].p, p.p]).map(shellWord).join(" ")
      : null;
    const parts = [
      el("h2", { id: "detail-name", text: p.n }),
      el("p", null, el("code", { id: "detail-path", text: p.p }), " ", copyButton(p.p, "Copy path")),
      el("dl", { class: "dl" },
        el("dt", { text: "Added" }), el("dd", { id: "detail-added", "data-bytes": p.a, text: iec(p.a) + " (" + pct(p.a, D.closure_size) + " of the closure)" }),
        el("dt", { text: "Self" }), el("dd", { id: "detail-self", "data-bytes": p.s, text: iec(p.s) }),
        el("dt", { text: "Closure" }), el("dd", { id: "detail-closure", "data-bytes": p.c, text: iec(p.c) }),
        el("dt", { text: "Held as" }), el("dd", null, verdictBadge(p.v), " " + VERDICT_TEXT[p.v]),
        DF ? el("dt", { text: "Change" }) : null,
        DF ? el("dd", { id: "detail-change", "data-change": changeOf(i) }, changeBadge(changeOf(i)), " ",
          ...(isNew(i) ? addedWhyNodes(i) : ["in BEFORE's closure too"])) : null,
        el("dt", { text: "Kind" }), el("dd", { text: p.k }),
        p.o ? el("dt", { text: "From" }) : null,
        p.o ? el("dd", { id: "detail-origin", text: p.o }) : null,
        el("dt", { text: "Kept alone by" }), el("dd", null, p.d < 0 ? "the roots together" : pathLink(p.d)),
        el("dt", { text: "Keeps alone" }), el("dd", { text: kids[i].length + " paths" }),
      ),
      el("h3", { text: "Why it is here (strongest chain: runtime first, then shortest)" }),
    ];
    const ch = el("ol", { class: "plain", id: "detail-chain" });
    chain.forEach((v, k) => {
      const li = el("li", null, pathLink(v));
      if (k + 1 < chain.length) {
        const e = edgeAt.get(v + ">" + chain[k + 1]);
        li.append(" ", verdictBadge(e ? e.verdict : null), " ↓");
      }
      ch.append(li);
    });
    parts.push(ch, whyCmd
      ? el("p", null, el("code", { id: "detail-why", text: whyCmd }), " ", copyButton(whyCmd, "Copy why command"))
      : el("p", { class: "hint", id: "detail-why-root", text: "A root: nothing holds it. Select a dependency to copy the why command that explains it." }));
    const refs = referrers[i].slice().sort((a, b) => (P[a].n < P[b].n ? -1 : 1));
    parts.push(el("h3", { text: "Referrers: edges holding it (" + refs.length + ")" }));
    if (noEvidence) parts.push(el("p", { class: "hint", text: "Evidence unavailable: the report was made without file contents." }));
    const inBox = el("div", { id: "detail-referrers" });
    refs.forEach((r) => inBox.append(edgeBlock(r, i, refs.length <= 3)));
    parts.push(inBox);
    const outs = p.r.slice().sort((a, b) => (P[a].n < P[b].n ? -1 : 1));
    parts.push(el("h3", { text: "References (" + outs.length + ")" }));
    const outBox = el("div", { id: "detail-references" });
    outs.forEach((t) => outBox.append(edgeBlock(i, t, false)));
    parts.push(outBox);
    parts.push(el("h3", { text: "Advice touching it (" + adviceOf[i].length + ")" }));
    const adv = el("div", { id: "detail-advice" });
    adviceOf[i].forEach((ai) => adv.append(adviceBlock(D.advice[ai])));
    if (!adviceOf[i].length) adv.append(el("p", { class: "hint", text: "None." }));
    parts.push(adv);
    detailEl.replaceChildren(...parts);
  }

  // ---- advice ------------------------------------------------------------
  const indexOf = new Map(P.map((p, i) => [p.p, i]));
  function nameOf(path) {
    const i = indexOf.get(path);
    return i === undefined ? path : P[i].n;
  }
  // Text with `code spans`, as advise writes its reasons: the spans as
  // <code>, the rest as text (never parsed as HTML).
  function inlineCode(t) {
    const parts = (t || "").split("`");
    // An unpaired backtick stays text.
    if (parts.length % 2 === 0) { const last = parts.pop(); parts[parts.length - 1] += "`" + last; }
    return parts.map((part, k) => (k % 2 ? el("code", { text: part }) : part)).filter((x) => x !== "");
  }
  function adviceBlock(a) {
    const i = indexOf.get(a.package);
    const saving = a.saving === null || a.saving === undefined
      ? "not simulated"
      : iec(a.saving) + " (" + (a.saving_percent || 0).toFixed(1) + "%)";
    const box = el("div", { class: "advice", "data-kind": a.kind },
      el("div", null, el("span", { class: "saving", text: saving }), " · ", el("strong", { text: a.kind }), " · ",
        i === undefined ? a.package : pathLink(i), " · safety: ", el("span", { text: a.safety })),
      el("p", { class: "reason" }, ...inlineCode(a.reason)));
    if (a.cuts.length) box.append(el("p", null, "Cuts: " + a.cuts.map(nameOf).join(", ")));
    if (a.removes.length) box.append(el("p", null, "Removes: " + a.removes.map(nameOf).join(", ")));
    for (const s of a.stays || []) {
      box.append(el("p", null, "Stays: " + nameOf(s.path) + (s.kept_by.length ? ", kept by " + s.kept_by.map(nameOf).join(" → ") : "") + " (" + s.verdict + ")"));
    }
    if (a.evidence.length) box.append(el("p", null, "Evidence: ", el("code", { text: a.evidence.slice(0, 8).join(" ") + (a.evidence.length > 8 ? " … (" + a.evidence.length + " files)" : "") })));
    if (a.snippet) box.append(el("pre", { class: "snippet", text: a.snippet }), copyButton(a.snippet, "Copy snippet"));
    return box;
  }
  function drawAdvice() {
    const v = document.getElementById("view-advice");
    const parts = [el("h2", { text: "Advice (" + D.advice.length + ")" })];
    if (BG) parts.push(el("p", { text: "No advice on the build graph: advice is about what outputs keep at run time (report without --derivation)." }));
    else if (noEvidence) parts.push(el("p", { text: "No advice: it needs file-level evidence, which this report was made without." }));
    else {
      parts.push(el("p", { id: "plan-total", text: "Closure now " + iec(D.closure_size) +
        (D.plan_saving !== null && D.plan_saving !== undefined
          ? "; every non-breaking action together (advise's plan) saves " + iec(D.plan_saving) + " (" + pct(D.plan_saving, D.closure_size) + ")."
          : ".") }));
    }
    D.advice.forEach((a) => parts.push(adviceBlock(a)));
    v.replaceChildren(...parts);
  }
  // The paths advice acts on, listed beside the map: on a large closure
  // their cells are a few MiB, too small for a label.
  function drawActionable() {
    const box = document.getElementById("actionable");
    const seen = new Map();
    D.advice.forEach((a) => {
      const i = indexOf.get(a.package);
      if (i === undefined) return;
      if (!seen.has(i)) seen.set(i, []);
      seen.get(i).push(a);
    });
    if (!seen.size) return;
    const ul = el("ul", { class: "plain", id: "actionable-list" });
    for (const [i, acts] of seen) {
      const best = acts.reduce((m, a) => Math.max(m, a.saving || 0), 0);
      ul.append(el("li", { "data-path": P[i].p, "data-bytes": P[i].a }, pathLink(i), " " + iec(P[i].a) + " · " +
        acts.map((a) => a.kind).join(", ") + (best ? " · saves up to " + iec(best) : "")));
    }
    box.replaceChildren(el("h3", { text: "Actionable paths (" + seen.size + ")" }), ul);
    box.hidden = false;
  }
  function drawProblems() {
    const v = document.getElementById("view-problems");
    const ul = el("ul");
    D.problems.forEach((p) => ul.append(el("li", null, el("code", { text: p.path + (p.file ? "/" + p.file : "") }), " " + p.kind + ": " + p.message)));
    v.replaceChildren(el("h2", { text: "Problems (" + D.problems.length + ")" }), D.problems.length ? ul : el("p", { text: "None: everything was read." }));
    if (BG) {
      const u = BG.unknown_outputs;
      const list = el("ul", { id: "unknown-outputs" });
      u.forEach((d) => list.append(el("li", null, el("code", { text: d.derivation }), ": " + d.outputs.join(", "))));
      v.append(el("h3", { text: "Derivations with outputs of unknown size (" + u.length + ")" }),
        u.length ? list : el("p", { text: "None: every output is valid in a store this report read." }));
      if (u.length) v.append(el("p", { text: "Their outputs are valid in no store read (not built, not in the cache given): counted as 0, never guessed." }));
    }
  }

  // ---- changes (report --diff) ---------------------------------------------
  function drawChanges() {
    const v = document.getElementById("view-changes");
    const parts = [
      el("h2", { id: "changes-heading", text: "Changes since " + DF.before.map(nameOfAny).join(", ") }),
      el("p", { id: "diff-summary", text: "Closure " + iec(DF.closure_size_before) + " → " + iec(D.closure_size) +
        " (" + iecDelta(D.closure_size - DF.closure_size_before) + "); paths " + DF.paths_before + " → " + N + "." }),
      el("h3", { text: "Packages (" + DF.packages.length + ")" }),
    ];
    if (DF.packages.length) {
      const t = el("table", { id: "diff-packages" },
        el("thead", null, el("tr", null, el("th", { scope: "col", text: "Package" }), el("th", { scope: "col", text: "Versions" }),
          el("th", { scope: "col", class: "num", text: "Size Δ" }))));
      const body = el("tbody");
      DF.packages.forEach((pk) => body.append(el("tr", null, el("td", { text: pk.name }), el("td", { text: pk.transition }),
        el("td", { class: "num", text: iecDelta(pk.size_delta) }))));
      t.append(body);
      parts.push(t);
    } else parts.push(el("p", { text: "No package changed." }));
    const addedBytes = DF.added.reduce((t, a) => t + P[a.i].s, 0);
    parts.push(el("h3", { text: "Added (" + DF.added.length + " paths, " + iec(addedBytes) + ")" }));
    const al = el("ul", { class: "plain", id: "added-list" });
    // Paths added for one reason through one referrer are one line, as
    // `diff` gives them; their paths are listed under it, closed.
    const groupsDrawn = new Set();
    DF.added.forEach((a) => {
      if (a.group !== undefined) {
        if (groupsDrawn.has(a.group)) return;
        groupsDrawn.add(a.group);
        const g = DF.groups[a.group];
        const members = el("ul", { class: "plain" });
        g.members.forEach((i) => members.append(el("li", { "data-path": P[i].p, "data-bytes": P[i].s }, pathLink(i), " " + iec(P[i].s))));
        al.append(el("li", { "data-change": "added", "data-group": a.group },
          changeBadge("added"), " ", g.line, el("details", null, el("summary", { text: g.members.length + " paths" }), members)));
        return;
      }
      al.append(el("li", { "data-change": a.change || "added", "data-path": P[a.i].p, "data-bytes": P[a.i].s },
        changeBadge(a.change || "added"), " ", pathLink(a.i), " " + iec(P[a.i].s) + " · ", ...addedWhyNodes(a.i)));
    });
    parts.push(DF.added.length ? al : el("p", { text: "None." }));
    const removedBytes = DF.removed.reduce((t, r) => t + r.nar_size, 0);
    parts.push(el("h3", { text: "Removed (" + DF.removed.length + " paths, " + iec(removedBytes) + ")" }));
    const rl = el("ul", { class: "plain", id: "removed-list" });
    DF.removed.forEach((r) => rl.append(el("li", { "data-change": "removed", "data-path": r.path, "data-bytes": r.nar_size },
      changeBadge("removed"), " ", el("strong", { text: r.name, title: r.path }), " " + iec(r.nar_size) + " · " + removedWhyText(r),
      " ", copyButton(r.path, "Copy path"))));
    parts.push(DF.removed.length ? rl : el("p", { text: "None." }));
    v.replaceChildren(...parts);
  }

  // ---- table -------------------------------------------------------------
  const COLS = [
    ["name", "Name", (i) => P[i].n, false],
    ["self", "Self", (i) => P[i].s, true],
    ["closure", "Closure", (i) => P[i].c, true],
    ["added", "Added", (i) => P[i].a, true],
    ["kind", "Kind", (i) => P[i].k, false],
    ["verdict", "Held as", (i) => P[i].v, false],
    ["refs", "Refs", (i) => P[i].r.length, true],
    ["referrers", "Referrers", (i) => referrers[i].length, true],
  ];
  if (DF) COLS.push(["change", "Change", (i) => changeOf(i), false]);
  let sortCol = 3;
  let sortDesc = true;
  const ROW_LIMIT = 1000;
  const filterEl = document.getElementById("filter");
  function drawTable() {
    const t = document.getElementById("table");
    const tr = t.tHead.rows[0];
    tr.replaceChildren();
    COLS.forEach(([id, label, , num], k) => {
      const sortState = k === sortCol ? (sortDesc ? "descending" : "ascending") : "none";
      tr.append(el("th", { class: num ? "num" : null, "aria-sort": sortState, scope: "col" },
        el("button", { type: "button", "data-sort": id, text: label + (k === sortCol ? (sortDesc ? " ▼" : " ▲") : ""),
          onclick: () => { if (sortCol === k) sortDesc = !sortDesc; else { sortCol = k; sortDesc = num; } drawTable(); } })));
    });
    const q = filterEl.value.trim().toLowerCase();
    const key = COLS[sortCol][2];
    const rows = [];
    for (let i = 0; i < N; i++) if (!q || P[i].p.toLowerCase().includes(q)) rows.push(i);
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      const c = x < y ? -1 : x > y ? 1 : 0;
      return (sortDesc ? -c : c) || (P[a].p < P[b].p ? -1 : 1);
    });
    const body = document.createDocumentFragment();
    for (const i of rows.slice(0, ROW_LIMIT)) {
      const row = el("tr", { tabindex: "0", "data-path": P[i].p, "data-change": DF ? changeOf(i) : null });
      row.addEventListener("click", () => { select(i, true); showTab("map", false); });
      row.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { select(i, true); showTab("map", false); detailEl.focus(); } });
      row.append(el("td", { text: P[i].n, title: P[i].p }), el("td", { class: "num", text: iec(P[i].s) }),
        el("td", { class: "num", text: iec(P[i].c) }), el("td", { class: "num", text: iec(P[i].a) }),
        el("td", { text: P[i].k }), el("td", null, verdictBadge(P[i].v)),
        el("td", { class: "num", text: P[i].r.length }), el("td", { class: "num", text: referrers[i].length }));
      if (DF) row.append(el("td", null, changeBadge(changeOf(i))));
      body.append(row);
    }
    t.tBodies[0].replaceChildren(body);
    document.getElementById("rowcount").textContent = rows.length > ROW_LIMIT
      ? "showing " + ROW_LIMIT + " of " + rows.length + " rows (filter to narrow)"
      : rows.length + " rows";
  }
  filterEl.addEventListener("input", drawTable);

  // ---- tabs ----------------------------------------------------------------
  const TABS = DF ? ["map", "table", "advice", "changes", "problems"] : ["map", "table", "advice", "problems"];
  if (DF) document.getElementById("tab-changes").hidden = false;
  let tableDrawn = false;
  function showTab(name, focus) {
    if (!TABS.includes(name)) {
      recordError("view: no " + name + " view in this report");
      return;
    }
    for (const t of TABS) {
      const b = document.getElementById("tab-" + t);
      const on = t === name;
      b.setAttribute("aria-selected", on);
      b.tabIndex = on ? 0 : -1;
      document.getElementById("view-" + t).hidden = !on;
      if (on && focus) b.focus();
    }
    if (name === "table" && !tableDrawn) { drawTable(); tableDrawn = true; }
    if (name === "map") drawMap();
  }
  TABS.forEach((t, k) => {
    const b = document.getElementById("tab-" + t);
    b.addEventListener("click", () => showTab(t, false));
    b.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        const n = (k + (ev.key === "ArrowRight" ? 1 : TABS.length - 1)) % TABS.length;
        showTab(TABS[n], true);
      }
    });
  });

  // ---- search --------------------------------------------------------------
  const resultsEl = document.getElementById("results");
  let hits = [];
  let hitAt = 0;
  function search(q) {
    q = q.trim().toLowerCase();
    hits = [];
    if (q) for (let i = 0; i < N && hits.length < 50; i++) if (P[i].p.toLowerCase().includes(q)) hits.push(i);
    hits.sort(byAdded);
    hitAt = 0;
    resultsEl.replaceChildren();
    hits.forEach((i, k) => {
      const li = el("li", { role: "option", id: "hit-" + k, "aria-selected": k === 0, "data-path": P[i].p, text: P[i].n + " — added " + iec(P[i].a) });
      li.addEventListener("mousedown", (ev) => { ev.preventDefault(); choose(i); });
      resultsEl.append(li);
    });
    if (q && !hits.length) resultsEl.append(el("li", { id: "no-hits", text: "No path matches “" + q + "”." }));
    resultsEl.hidden = !q;
    drawMap();
  }
  function choose(i) {
    resultsEl.hidden = true;
    select(i, true);
    showTab("map", false);
  }
  searchEl.addEventListener("input", () => search(searchEl.value));
  searchEl.addEventListener("keydown", (ev) => {
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      if (!hits.length) return;
      hitAt = (hitAt + (ev.key === "ArrowDown" ? 1 : hits.length - 1)) % hits.length;
      [...resultsEl.children].forEach((li, k) => li.setAttribute("aria-selected", k === hitAt));
      searchEl.setAttribute("aria-activedescendant", "hit-" + hitAt);
    } else if (ev.key === "Enter" && hits.length) {
      choose(hits[hitAt]);
    } else if (ev.key === "Escape") {
      resultsEl.hidden = true;
    }
  });
  colourEl.addEventListener("change", (ev) => {
    colourBy = ev.target.value;
    drawLegend();
    drawMap();
  });

  // ---- URL hash: #select=PATH-or-NAME&search=TEXT&zoom=PATH&view=TAB&click=PATH&hover=PATH
  function find(s) {
    if (indexOf.has(s)) return indexOf.get(s);
    const exact = P.findIndex((p) => p.n === s);
    if (exact >= 0) return exact;
    const low = s.toLowerCase();
    let best = -1;
    P.forEach((p, i) => { if (p.p.toLowerCase().includes(low) && (best < 0 || p.a > P[best].a)) best = i; });
    return best;
  }
  let writing = false;
  function writeHash() {
    const parts = [];
    if (selected >= 0) parts.push("select=" + encodeURIComponent(P[selected].p));
    if (zoom >= 0) parts.push("zoom=" + encodeURIComponent(P[zoom].p));
    writing = true;
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
    writing = false;
  }
  function readHash() {
    if (writing) return;
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has("view")) showTab(h.get("view"), false);
    if (h.has("zoom")) { const z = find(h.get("zoom")); if (z >= 0) zoom = z; }
    if (h.has("search")) { searchEl.value = h.get("search"); search(searchEl.value); }
    if (h.has("select")) {
      const i = find(h.get("select"));
      if (i >= 0) select(i, !h.has("zoom"));
      else recordError("select: no path matches " + h.get("select"));
    }
    // A real click on a drawn cell, through its event handler (what a
    // headless test without a DevTools connection can ask for).
    if (h.has("click")) {
      const i = find(h.get("click"));
      const cell = i >= 0 && mapEl.querySelector('[data-path="' + CSS.escape(P[i].p) + '"]');
      if (cell) cell.click();
      else recordError("click: no drawn cell for " + h.get("click"));
    }
    // The pointer over a drawn cell, through its own handler.
    if (h.has("hover")) {
      const i = find(h.get("hover"));
      const cell = i >= 0 && mapEl.querySelector('[data-path="' + CSS.escape(P[i].p) + '"]');
      if (cell) cell.dispatchEvent(new MouseEvent("mouseenter"));
      else recordError("hover: no drawn cell for " + h.get("hover"));
    }
  }
  window.addEventListener("hashchange", readHash);

  drawLegend();
  drawAdvice();
  drawActionable();
  drawProblems();
  if (DF) drawChanges();
  drawMap();
  readHash();
  // Nothing asked for: the detail pane shows the heaviest root.
  if (selected < 0 && D.roots.length) {
    const r = D.roots.slice().sort((a, b) => P[b].a - P[a].a)[0];
    select(r, false, true);
  }
  document.body.setAttribute("data-ready", "true");
  // Time from navigation start to the first drawing, for benchmarks.
  document.body.setAttribute("data-painted-ms", Math.round(performance.now()));
})();
