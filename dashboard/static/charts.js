// Charts drawn as SVG from the JSON the server sends: lines over time, step CDFs, bars.
window.trainyardCharts = (function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const W = 560, H = 230, L = 56, R = 14, T = 14, B = 34;
  const COLOURS = ["#3b78c4", "#d2642a", "#3f9d4a", "#a347a8", "#c4a21b", "#2aa5a5", "#c43b5c", "#6a6a6a",
    "#7f5a2e", "#4c4cc4", "#8fb031", "#e07bb5"];
  const TITLES = { allocation: "Allocation over time", queues: "Queue length over time",
    waits: "Wait-time CDF per ClusterQueue", tiers: "Placement tiers (lowest level holding each job)" };

  function node(name, attrs, text) {
    const element = document.createElementNS(NS, name);
    for (const key in attrs) element.setAttribute(key, attrs[key]);
    if (text !== undefined) element.textContent = text;
    return element;
  }

  function symlog(v) { return Math.sign(v) * Math.log10(1 + Math.abs(v)); }
  function unsymlog(v) { return Math.sign(v) * (Math.pow(10, Math.abs(v)) - 1); }

  function extent(values) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (!isFinite(lo)) return [0, 1];
    if (lo === hi) return [lo - 1 < 0 && lo >= 0 ? 0 : lo - 1, hi + 1];
    return [lo, hi];
  }

  function label(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (a >= 10 || Number.isInteger(v)) return v.toFixed(0);
    return v.toFixed(2);
  }

  function frame(xRange, yRange, xlabel, ylabel, transform) {
    const svg = node("svg", { viewBox: `0 0 ${W} ${H}`, class: "plot", role: "img" });
    const t = transform || ((v) => v), u = transform ? unsymlog : ((v) => v);
    const [x0, x1] = [t(xRange[0]), t(xRange[1])];
    const sx = (v) => L + ((t(v) - x0) / (x1 - x0 || 1)) * (W - L - R);
    const sy = (v) => H - B - ((v - yRange[0]) / (yRange[1] - yRange[0] || 1)) * (H - T - B);
    svg.appendChild(node("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
    svg.appendChild(node("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
    for (let i = 0; i <= 4; i++) {
      const yv = yRange[0] + (i / 4) * (yRange[1] - yRange[0]);
      svg.appendChild(node("text", { x: L - 6, y: sy(yv) + 4, class: "tick", "text-anchor": "end" }, label(yv)));
      const xv = u(x0 + (i / 4) * (x1 - x0));
      svg.appendChild(node("text", { x: sx(xv), y: H - B + 16, class: "tick", "text-anchor": "middle" }, label(xv)));
    }
    svg.appendChild(node("text", { x: (L + W - R) / 2, y: H - 3, class: "axis-label", "text-anchor": "middle" }, xlabel || ""));
    svg.appendChild(node("text", { x: 12, y: T + (H - T - B) / 2, class: "axis-label", "text-anchor": "middle",
      transform: `rotate(-90 12 ${T + (H - T - B) / 2})` }, ylabel || ""));
    return { svg, sx, sy };
  }

  function path(points, colour, step) {
    let d = "";
    points.forEach(([x, y], i) => {
      if (i === 0) d += `M${x.toFixed(1)},${y.toFixed(1)}`;
      else if (step) d += `H${x.toFixed(1)}V${y.toFixed(1)}`;
      else d += `L${x.toFixed(1)},${y.toFixed(1)}`;
    });
    return node("path", { d, fill: "none", stroke: colour, "stroke-width": 1.6, class: "series" });
  }

  function legend(names) {
    const list = document.createElement("p");
    list.className = "chart-legend";
    names.forEach((name, i) => {
      const key = document.createElement("span");
      key.innerHTML = `<i style="background:${COLOURS[i % COLOURS.length]}"></i>`;
      key.append(name);
      list.append(key);
    });
    return list;
  }

  function lines(spec) {
    const names = Object.keys(spec.series || {});
    const all = names.flatMap((n) => spec.series[n]).concat(spec.limit ? [spec.limit, 0] : [0]);
    const { svg, sx, sy } = frame(extent(spec.x), extent(all), spec.xlabel || "virtual time (h)", spec.ylabel || "");
    if (spec.shade) {
      svg.appendChild(node("rect", { x: sx(spec.x[0]), y: T, width: Math.max(0, sx(spec.shade) - sx(spec.x[0])),
        height: H - T - B, class: "shade" }));
    }
    if (spec.limit) {
      svg.appendChild(node("line", { x1: L, x2: W - R, y1: sy(spec.limit), y2: sy(spec.limit), class: "limit" }));
    }
    names.forEach((name, i) => {
      const values = spec.series[name];
      svg.appendChild(path(spec.x.map((x, j) => [sx(x), sy(values[j])]), COLOURS[i % COLOURS.length], false));
    });
    return [svg, legend(names)];
  }

  function cdfs(spec) {
    const names = Object.keys(spec);
    const xs = names.flatMap((n) => spec[n].map((p) => p[0])).concat([0]);
    const { svg, sx, sy } = frame(extent(xs), [0, 1], "wait (s; 0, then log scale)", "fraction admitted within", symlog);
    names.forEach((name, i) => {
      const points = [[0, 0]].concat(spec[name]);
      svg.appendChild(path(points.map(([x, y]) => [sx(x), sy(y)]), COLOURS[i % COLOURS.length], true));
    });
    return [svg, legend(names)];
  }

  function bars(spec) {
    const names = Object.keys(spec);
    const { svg, sy } = frame([0, 1], extent(names.map((n) => spec[n]).concat([0])), "", "placements");
    const width = (W - L - R) / Math.max(1, names.length);
    names.forEach((name, i) => {
      const x = L + i * width + width * 0.15, y = sy(spec[name]);
      svg.appendChild(node("rect", { x, y, width: width * 0.7, height: H - B - y, class: "series bar-rect",
        fill: COLOURS[0] }));
      svg.appendChild(node("text", { x: x + width * 0.35, y: H - B + 28, class: "tick", "text-anchor": "middle" },
        name.split("/").pop()));
      svg.appendChild(node("text", { x: x + width * 0.35, y: y - 3, class: "tick", "text-anchor": "middle" },
        label(spec[name])));
    });
    return [svg];
  }

  function draw(key, spec) {
    const figure = document.createElement("figure");
    figure.className = "chart";
    figure.dataset.chart = key;
    const caption = document.createElement("figcaption");
    caption.textContent = TITLES[key] || key;
    figure.append(caption);
    const parts = key === "waits" ? cdfs(spec) : key === "tiers" ? bars(spec) : lines(spec);
    figure.append(...parts);
    return figure;
  }

  async function fill(container) {
    container.dataset.drawn = "loading";
    const response = await fetch(container.dataset.charts);
    const data = response.ok ? await response.json() : { note: await response.text() };
    const keys = Object.keys(data).filter((k) => k !== "note");
    const figures = keys.map((key) => draw(key, data[key]));
    if (!keys.length) {
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = data.note || "nothing reported yet";
      figures.push(note);
    }
    container.replaceChildren(...figures); // the previous drawing stays until this one is ready
    container.dataset.drawn = String(keys.length);
  }

  function drawAll(root) {
    for (const container of root.querySelectorAll("[data-charts]")) {
      if (!container.dataset.drawn) fill(container);
    }
  }

  return { drawAll };
})();
