// What the canvas charts (token_canvas.js, grid_canvas.js) share; Python prepends this file to
// each chart's module: the payload parser, the colour scale as a 256-colour table, the cells as
// one pixel each, round tick numbers, the colour bar, and the PNG and SVG images for slides.
//
// A payload: 4 magic bytes, uint32 header length, UTF-8 JSON header, zero padding to a multiple
// of 4, then rows x cols float32 little-endian (head.shape = [rows, cols]).

const FONT = '"Source Sans", sans-serif';
function heading(ctx, title, notes, colours) {
  // A chart's title (bold) at the top left and the lines of small print under it.
  ctx.fillStyle = colours.heading;
  ctx.font = `700 16px ${FONT}`;
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  ctx.fillText(title, 8, 22);
  ctx.fillStyle = colours.label;
  ctx.font = `11px ${FONT}`;
  notes.forEach((line, i) => ctx.fillText(line, 8, 40 + 14 * i));
}

function fitted(canvas, width, height) {
  // The canvas `width` x `height` css px, sharp on this screen; its context drawing in css px.
  const dpr = window.devicePixelRatio || 1, ctx = canvas.getContext("2d");
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function announce(root, colours, born) {
  // What the page's tests and tools read once a chart is drawn: its colours, how many times it
  // was drawn, and an "attnviz:drawn" event with the time since its data arrived (`born`).
  root.dataset.heading = `rgb(${hexRgb(colours.heading).join(", ")})`;
  root.dataset.label = `rgb(${hexRgb(colours.label).join(", ")})`;
  root.dataset.drawn = String(Number(root.dataset.drawn || 0) + 1);
  const now = performance.now();
  root.dispatchEvent(new CustomEvent("attnviz:drawn", { bubbles: true, detail: { start: born, duration: now - born } }));
}

function colourbar(ctx, bar, colours) {
  // The colour scale from bar.lo (bottom) to bar.hi (top) at (bar.x, bar.y), bar.h px tall, its
  // tick numbers (`ticks`) right of it and its title above it.
  const span = bar.hi - bar.lo || 1;
  for (let y = 0; y < bar.h; y++) {
    const k = 3 * Math.round(255 * (1 - y / Math.max(1, bar.h - 1)));
    ctx.fillStyle = `rgb(${bar.lut[k]},${bar.lut[k + 1]},${bar.lut[k + 2]})`;
    ctx.fillRect(bar.x, bar.y + y, 16, 1);
  }
  ctx.fillStyle = colours.label;
  ctx.font = `12px ${FONT}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const [v, s] of bar.ticks) ctx.fillText(s, bar.x + 22, bar.y + bar.h * (1 - (v - bar.lo) / span));
  ctx.textBaseline = "alphabetic";
  ctx.fillText(bar.title, bar.x - 2, bar.y - 8);
}

const SVG = "http://www.w3.org/2000/svg";
const ANCHOR = { left: "start", start: "start", center: "middle", right: "end", end: "end" };
const BASELINE = { middle: "central", top: "text-before-edge", alphabetic: "alphabetic" };

function parse(bytes, kind) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const magic = String.fromCharCode(u8[0], u8[1], u8[2], u8[3]);
  if (magic !== kind) throw new Error(`not a ${kind} payload`);
  const length = new DataView(u8.buffer, u8.byteOffset + 4, 4).getUint32(0, true);
  const head = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + length)));
  const start = 8 + length + ((4 - ((8 + length) % 4)) % 4);
  const [rows, cols] = head.shape;
  const z = new Float32Array(u8.slice(start, start + 4 * rows * cols).buffer);
  return { head, z, rows, cols };
}

function hexRgb(c) {
  const m = /^#?([0-9a-f]{6})$/i.exec(c.trim());
  if (m) return [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16));
  const n = c.match(/[\d.]+/g) || [0, 0, 0];
  return n.slice(0, 3).map(Number);
}

function lut(scale) {
  // 256 colours interpolated in RGB between the scale's stops, as plotly.js does.
  const stops = scale.map(([p, c]) => [Number(p), hexRgb(c)]);
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const p = i / 255;
    let k = 1;
    while (k < stops.length - 1 && stops[k][0] < p) k++;
    const [p0, c0] = stops[k - 1], [p1, c1] = stops[k];
    const f = p1 > p0 ? Math.min(1, Math.max(0, (p - p0) / (p1 - p0))) : 0;
    for (let ch = 0; ch < 3; ch++) out[3 * i + ch] = Math.round(c0[ch] + f * (c1[ch] - c0[ch]));
  }
  return out;
}

function range(head, z) {
  if (head.zmin !== null && head.zmax !== null) return [head.zmin, head.zmax];
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < z.length; i++) {
    const v = z[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return lo <= hi ? [lo, hi] : [0, 1];
}

function cells(map) {
  // One RGBA pixel per cell; a NaN cell stays transparent (a gap, as in Plotly).
  const { z, rows, cols, colours, lo, hi } = map;
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(cols, rows);
  const px = img.data, span = hi > lo ? hi - lo : 1;
  for (let i = 0; i < z.length; i++) {
    const v = z[i];
    if (v !== v) continue;
    const k = 3 * Math.round(255 * Math.min(1, Math.max(0, (v - lo) / span)));
    px[4 * i] = colours[k];
    px[4 * i + 1] = colours[k + 1];
    px[4 * i + 2] = colours[k + 2];
    px[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
  return canvas;
}

function ticks(lo, hi) {
  // About five round numbers inside [lo, hi] (1, 2 or 5 times a power of ten apart).
  const span = hi - lo || 1, raw = span / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push([v, v.toFixed(digits)]);
  return out;
}

function shortened(ctx, text, max) {
  if (ctx.measureText(text).width <= max) return text;
  const chars = Array.from(text);
  let lo = 0, hi = chars.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(chars.slice(0, mid).join("") + "…").width <= max) lo = mid;
    else hi = mid - 1;
  }
  return chars.slice(0, lo).join("") + "…";
}

function palette(map, el) {
  const bg = getComputedStyle(el).getPropertyValue("--st-background-color") || "#ffffff";
  const [r, g, b] = hexRgb(bg);
  return map.head.palette[0.299 * r + 0.587 * g + 0.114 * b < 128 ? "dark" : "light"];
}

function svgContext(doc, parent) {
  // The part of a canvas 2D context that the charts' `draw` use, writing SVG elements: the same
  // layout, with text as text (a slide can be edited) and the cells as one pixelated image.
  const measure = document.createElement("canvas").getContext("2d");
  let ops = [];
  const stack = [];
  const add = (tag, attrs) => {
    const el = doc.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (ops.length) el.setAttribute("transform", ops.join(" "));
    parent.append(el);
    return el;
  };
  let path = "";
  const ctx = {
    font: `12px ${FONT}`, fillStyle: "#000", textAlign: "start", textBaseline: "alphabetic", imageSmoothingEnabled: false,
    strokeStyle: "#000", lineWidth: 1,
    measureText: (text) => { measure.font = ctx.font; return measure.measureText(text); },
    clearRect: () => {},
    save: () => stack.push({ ops: [...ops], font: ctx.font, fillStyle: ctx.fillStyle, textAlign: ctx.textAlign, textBaseline: ctx.textBaseline,
      strokeStyle: ctx.strokeStyle, lineWidth: ctx.lineWidth }),
    restore: () => { const s = stack.pop(); ops = s.ops; delete s.ops; Object.assign(ctx, s); },
    translate: (x, y) => ops.push(`translate(${x} ${y})`),
    rotate: (a) => ops.push(`rotate(${(a * 180) / Math.PI})`),
    fillRect: (x, y, w, h) => add("rect", { x, y, width: w, height: h, fill: ctx.fillStyle }),
    strokeRect: (x, y, w, h) => add("rect", { x, y, width: w, height: h, fill: "none", stroke: ctx.strokeStyle, "stroke-width": ctx.lineWidth }),
    beginPath: () => { path = ""; },
    moveTo: (x, y) => { path += `M${x} ${y}`; },
    lineTo: (x, y) => { path += `L${x} ${y}`; },
    stroke: () => add("path", { d: path, fill: "none", stroke: ctx.strokeStyle, "stroke-width": ctx.lineWidth }),
    fillText: (text, x, y) => {
      add("text", { x, y, fill: ctx.fillStyle, style: `font: ${ctx.font}; white-space: pre`,
        "text-anchor": ANCHOR[ctx.textAlign] || "start", "dominant-baseline": BASELINE[ctx.textBaseline] || "alphabetic" })
        .textContent = text;
    },
    drawImage: (img, sx, sy, sw, sh, dx, dy, dw, dh) => {
      const box = add("svg", { x: dx, y: dy, width: dw, height: dh, viewBox: `${sx} ${sy} ${sw} ${sh}`, preserveAspectRatio: "none" });
      const cells = doc.createElementNS(SVG, "image");
      for (const [k, v] of Object.entries({ href: img.toDataURL("image/png"), width: img.width, height: img.height,
        style: "image-rendering: pixelated", preserveAspectRatio: "none" })) cells.setAttribute(k, String(v));
      box.append(cells);
    },
  };
  return ctx;
}

function image(format, caption, width, height, scale, room, font, colours, paint) {
  // A whole chart as a slide image with the caption under it: a PNG `scale` px per css px, or an
  // SVG of the same layout (text as text, the cells as one pixelated image). `paint(ctx)` draws
  // the chart into a `width` x `height` css px box.
  let ctx, canvas, doc;
  if (format === "png") {
    canvas = document.createElement("canvas");
    canvas.width = width * scale;
    canvas.height = (height + room) * scale;
    ctx = canvas.getContext("2d");
    ctx.scale(scale, scale);
  } else {
    doc = document.implementation.createDocument(SVG, "svg", null);
    const svg = doc.documentElement;
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(height + room));
    svg.setAttribute("viewBox", `0 0 ${width} ${height + room}`);
    const title = doc.createElementNS(SVG, "title");
    title.textContent = caption;
    svg.append(title);
    ctx = svgContext(doc, svg);
  }
  ctx.fillStyle = colours.background;
  ctx.fillRect(0, 0, width, height + room);
  paint(ctx);
  if (caption) {  // a slide draws its own caption (app/slides.js) and asks for none here
    ctx.font = `${font.size}px ${FONT}`;
    ctx.fillStyle = font.color;
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillText(caption, 8, height + 6);
  }
  if (format === "png") return canvas.toDataURL("image/png");
  return "data:image/svg+xml;charset=utf-8," + encodeURIComponent(new XMLSerializer().serializeToString(doc));
}

function mount(parentElement, className, head, ...more) {
  // The chart's root (replacing the last one drawn of its kind, not Streamlit's <style>): its canvas,
  // named for screen readers, the hover tip and `more`. The image buttons and the page's chart
  // counters find it by [data-attnviz-map].
  const root = document.createElement("div");
  root.className = className;
  root.dataset.attnvizMap = "";
  const canvas = document.createElement("canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", `${head.title}. ${head.hint}`);
  const tip = document.createElement("div");
  tip.className = "attnviz-map-tip";
  root.append(canvas, tip, ...more);
  for (const old of parentElement.querySelectorAll(`:scope > .${className.split(" ").pop()}`)) old.remove();
  parentElement.append(root);
  return { root, canvas, tip };
}

function chartWidth(root, parentElement) {
  // The width to draw at, kept for `follow`.
  root.__attnvizWidth = root.clientWidth;
  return Math.max(200, root.__attnvizWidth || parentElement.clientWidth || 600);
}

function follow(root, wait, render) {
  // `render()` once the chart may be drawn (`whenShown`), then at each change of its width; returns
  // what stops both.
  const observer = new ResizeObserver(() => {
    if (root.clientWidth !== root.__attnvizWidth) render();
  });
  const cancel = whenShown(wait, () => {
    observer.observe(root);
    render();
  });
  return () => {
    cancel();
    observer.disconnect();
  };
}

function whenShown(wait, then) {
  // The first draw, at once or once the element `wait.selector` is in the page (the explorer's
  // maps wait for its sentence box: app/canvas/token_canvas.py `token_map`), at most `wait.wait_ms`.
  // Returns what stops the waiting.
  if (!wait || document.querySelector(wait.selector)) {
    then();
    return () => {};
  }
  let timer = null;
  const seen = new MutationObserver(() => {
    if (document.querySelector(wait.selector)) go();
  });
  const stop = () => {
    seen.disconnect();
    clearTimeout(timer);
  };
  const go = () => {
    stop();
    then();
  };
  seen.observe(document.body, { childList: true, subtree: true });
  timer = setTimeout(go, wait.wait_ms);
  return stop;
}
