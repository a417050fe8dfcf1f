// The explorer's token map drawn on a canvas: the float32 weights arrive as bytes,
// one pixel per cell is coloured once, and the visible part is scaled into the plot. Hover reads
// the same array, so it shows the exact weight; drag a box to zoom in, double-click for the whole
// map; where the page asks (`head.click`), a click on a cell sends {i, j} to Python as the "click"
// trigger value, and `head.mark` [i, j] outlines the cell chosen. Every visitor string (tokens)
// reaches the page as canvas text or as textContent only.
// Payload: "AVM1" (attnviz/views/token_canvas.py), read by canvas_common.js.

const MAX_LABEL_PX = 110;
const LINE_PX = 15;

function labelled(ctx, labels, view, step) {
  const out = [];
  for (let i = Math.ceil(view[0] / step) * step; i < view[1]; i += step) out.push([i, shortened(ctx, labels[i], MAX_LABEL_PX)]);
  return out;
}

function layout(ctx, map, width, height, view) {
  // Where everything goes, measured with the canvas's own text metrics: the labels depend on the
  // plot's size and the plot's size on the labels, so twice from a first guess.
  const { head } = map, [r0, r1, c0, c1] = view;
  ctx.font = `12px ${FONT}`;
  const bar = ticks(map.lo, map.hi);
  const barText = Math.max(...bar.map(([, s]) => ctx.measureText(s).width), ctx.measureText(head.bar).width / 2);
  const top = 34 + (head.note ? 18 : 0), right = 24 + 16 + 6 + barText + 8;
  let size = Math.max(60, Math.min(width - 160 - right, height - top - 120)), L = null;
  for (let pass = 0; pass < 2; pass++) {
    const ys = labelled(ctx, head.rows, [r0, r1], Math.max(1, Math.ceil(LINE_PX / (size / (r1 - r0)))));
    const colPx = size / (c1 - c0), xStep = Math.max(1, Math.ceil(LINE_PX / colPx));
    const xs = labelled(ctx, head.cols, [c0, c1], xStep);
    const yText = Math.max(0, ...ys.map(([, s]) => ctx.measureText(s).width));
    const xText = Math.max(0, ...xs.map(([, s]) => ctx.measureText(s).width));
    const upright = xText + 6 > colPx * xStep;
    const left = 24 + 16 + yText + 8, labels = (upright ? xText : LINE_PX) + 6, bottom = labels + 10 + 24;
    size = Math.max(40, Math.min(width - left - right, height - top - bottom));
    const x0 = left + Math.max(0, (width - left - right - size) / 2);
    L = { top, left, bottom, right, size, x0, y0: top, ys, xs, upright, bar, labels, yText };
  }
  return L;
}

function draw(ctx, map, width, height, view, colours) {
  const { head } = map, L = layout(ctx, map, width, height, view), [r0, r1, c0, c1] = view;
  const { x0, y0, size } = L, cw = size / (c1 - c0), ch = size / (r1 - r0);
  ctx.clearRect(0, 0, width, height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(map.image, c0, r0, c1 - c0, r1 - r0, x0, y0, size, size);
  heading(ctx, head.title, head.note ? [head.note] : [], colours);
  ctx.font = `12px ${FONT}`;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const [i, s] of L.ys) ctx.fillText(s, x0 - 6, y0 + (i - r0 + 0.5) * ch);
  for (const [j, s] of L.xs) {
    const x = x0 + (j - c0 + 0.5) * cw;
    ctx.save();
    ctx.translate(x, y0 + size + 6);
    if (L.upright) ctx.rotate(-Math.PI / 2);
    else ctx.textAlign = "center";
    ctx.textBaseline = L.upright ? "middle" : "top";
    ctx.fillText(s, 0, 0);
    ctx.restore();
  }
  ctx.font = `14px ${FONT}`;
  ctx.textAlign = "center";
  ctx.textBaseline = "alphabetic";
  ctx.fillText(head.xtitle, x0 + size / 2, y0 + size + L.labels + 24);
  ctx.save();
  ctx.translate(Math.max(18, x0 - 6 - L.yText - 14), y0 + size / 2);  // beside its labels, as Plotly puts it
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(head.ytitle, 0, 0);
  ctx.restore();
  const mark = head.mark;
  if (mark && mark[0] >= r0 && mark[0] < r1 && mark[1] >= c0 && mark[1] < c1) {
    ctx.strokeStyle = colours.heading;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 + (mark[1] - c0) * cw, y0 + (mark[0] - r0) * ch, Math.max(cw, 3), Math.max(ch, 3));
    ctx.lineWidth = 1;
  }
  const bar = { x: L.x0 + L.size + 24, y: L.y0 + 20, h: Math.max(20, L.size - 20) };
  colourbar(ctx, { ...bar, lo: map.lo, hi: map.hi, lut: map.colours, ticks: L.bar, title: head.bar }, colours);
  return L;
}

function fill(template, values) {
  // One pass over the template: a token that reads "{w}" stays itself.
  return template.replace(/\{([qkw])\}/g, (_, field) => values[field]);
}

export default function ({ data, parentElement, setTriggerValue }) {
  let born = performance.now();  // the first draw counts from the data's arrival here
  const map = parse(data, "AVM1");
  map.colours = lut(map.head.scale);
  [map.lo, map.hi] = range(map.head, map.z);
  map.image = cells(map);
  const box = document.createElement("div");
  box.className = "attnviz-map-box";
  const { root, canvas, tip } = mount(parentElement, "attnviz-map", map.head, box);
  const full = [0, map.rows, 0, map.cols];
  let view = full, L = null, start = null, pending = null;
  const CLICK_WAIT_MS = 300;  // a second click within this is a double-click (the whole map), not a pick
  const height = map.head.height;

  function render() {
    born = born === null ? performance.now() : born;
    const w = chartWidth(root, parentElement);
    const whole = layout(canvas.getContext("2d"), map, w, height, full);
    const used = Math.min(height, Math.ceil(whole.y0 + whole.size + whole.bottom + 4));  // no empty band under it
    const ctx = fitted(canvas, w, used), colours = palette(map, parentElement);
    L = draw(ctx, map, w, used, view, colours);
    const h = map.head;  // every text drawn, as the page's tests and tools read it
    root.__attnvizText = [h.title, h.note, h.xtitle, h.ytitle, h.bar, ...[...L.ys, ...L.xs, ...L.bar].map(([, t]) => t)]
      .filter((t) => t);
    root.__attnvizLayout = { x0: L.x0, y0: L.y0, size: L.size, view: [...view], barText: L.x0 + L.size + 24 + 22 };
    root.dataset.view = view.join(",");
    root.classList.add("attnviz-map-drawn");  // a hook for tools: the map is drawn (warmup.MAP_DRAWN)
    announce(root, colours, born);
    born = null;
  }

  function cell(event) {
    const r = canvas.getBoundingClientRect(), x = event.clientX - r.left, y = event.clientY - r.top;
    if (!L || x < L.x0 || y < L.y0 || x >= L.x0 + L.size || y >= L.y0 + L.size) return null;
    const [r0, r1, c0, c1] = view;
    const i = r0 + Math.floor(((y - L.y0) / L.size) * (r1 - r0)), j = c0 + Math.floor(((x - L.x0) / L.size) * (c1 - c0));
    return { i: Math.min(i, r1 - 1), j: Math.min(j, c1 - 1), x, y };
  }

  function hover(event) {
    const at = cell(event);
    if (start) {
      const x = Math.min(start.x, at ? at.x : start.x), y = Math.min(start.y, at ? at.y : start.y);
      Object.assign(box.style, { display: "block", left: `${x}px`, top: `${y}px`,
        width: `${Math.abs((at ? at.x : start.x) - start.x)}px`, height: `${Math.abs((at ? at.y : start.y) - start.y)}px` });
    }
    const v = at ? map.z[at.i * map.cols + at.j] : NaN;
    if (!at || v !== v) {
      tip.style.display = "none";
      return;
    }
    const values = { q: `${map.head.rows[at.i]} (${at.i})`, k: `${map.head.cols[at.j]} (${at.j})`, w: v.toFixed(6) };
    tip.textContent = map.head.hover.map((line) => fill(line, values)).join("\n");
    tip.style.display = "block";
    tip.style.left = `${Math.min(at.x + 14, root.clientWidth - tip.offsetWidth - 4)}px`;
    tip.style.top = `${at.y + 14}px`;
    root.dataset.hover = `${at.i},${at.j}`;
  }

  function press(event) {
    const at = cell(event);
    start = at && event.button === 0 ? at : null;
  }

  function release(event) {
    const from = start, to = cell(event) || from;
    start = null;
    box.style.display = "none";
    if (!from) return;
    if (Math.abs(to.x - from.x) + Math.abs(to.y - from.y) < 6) {
      if (map.head.click && setTriggerValue) {
        clearTimeout(pending);
        pending = setTimeout(() => setTriggerValue("click", { i: from.i, j: from.j }), CLICK_WAIT_MS);
      }
      return;
    }
    view = [Math.min(from.i, to.i), Math.max(from.i, to.i) + 1, Math.min(from.j, to.j), Math.max(from.j, to.j) + 1];
    render();
  }

  function reset() {
    clearTimeout(pending);
    view = full;
    render();
  }

  function leave() {
    tip.style.display = "none";
    start = null;  // a box dragged out of the map is dropped
    box.style.display = "none";
  }

  root.__attnvizMap = map;
  root.__attnvizZoom = (v) => { view = v || full; render(); };
  root.__attnvizImage = (format, caption, width, h, scale, room, font) => {
    const colours = palette(map, parentElement), whole = [0, map.rows, 0, map.cols];
    return image(format, caption, width, h, scale, room, font, colours, (ctx) => draw(ctx, map, width, h, whole, colours));
  };
  canvas.addEventListener("mousemove", hover);
  canvas.addEventListener("mousedown", press);
  canvas.addEventListener("mouseup", release);
  canvas.addEventListener("dblclick", reset);
  canvas.addEventListener("mouseleave", leave);
  const stop = follow(root, map.head.after, render);
  return () => {
    clearTimeout(pending);
    stop();
  };
}
