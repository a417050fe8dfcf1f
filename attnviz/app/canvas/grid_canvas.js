// The explorer's all-heads grid drawn on a canvas: `model_view`'s mosaic arrives as
// float32 bytes (NaN between the thumbnails), one pixel per cell is coloured once and the whole
// mosaic is scaled into the plot, head across and layer down, as Plotly drew it. On top: the
// key/value groups of a decoder, the head in focus and the heads switched off. Hover names a
// head and the key token it looks at most; a click sends {layer, head} to Python (a trigger
// value: one rerun, then it is gone). Every visitor string reaches the page as canvas text or as
// textContent only. Payload: "AVG1" (attnviz/views/grid_canvas.py), read by canvas_common.js.

const TICK_PX = 16;

function wrapped(ctx, text, max) {
  // Lines of at most `max` px, broken at a space where there is one (Chinese: anywhere).
  const out = [];
  let line = "";
  for (const ch of Array.from(text)) {
    if (line && ctx.measureText(line + ch).width > max) {
      const cut = line.lastIndexOf(" ");
      if (cut > 0 && ch !== " ") {
        out.push(line.slice(0, cut));
        line = line.slice(cut + 1);
      } else {
        out.push(line);
        line = "";
      }
      if (ch === " ") continue;
    }
    line += ch;
  }
  if (line) out.push(line);
  return out;
}

function every(n, unit) {
  // Tick labels 0..n-1, every `step` where the cells are too small for all of them.
  const step = Math.max(1, Math.ceil(TICK_PX / Math.max(1, unit)));
  const out = [];
  for (let i = 0; i < n; i += step) out.push(i);
  return out;
}

function gridLayout(ctx, grid, width, height, bare = false) {
  // Where everything goes: the heading and its notes (wrapped to the width), then square cells as
  // large as the room left by the tick numbers, the axis titles and the colour bar allows.
  // `bare`: an image, which no one can click: without the note that says what a click does.
  const { head } = grid;
  ctx.font = `11px ${FONT}`;
  const notes = [...head.notes, head.group_note].filter((s) => s && !(bare && s === head.hint))
    .flatMap((s) => wrapped(ctx, s, width - 16));
  ctx.font = `12px ${FONT}`;
  const bar = ticks(grid.lo, grid.hi);
  const barText = Math.max(...bar.map(([, s]) => ctx.measureText(s).width), ctx.measureText(head.bar).width / 2);
  const yText = ctx.measureText(String(head.layers - 1)).width;
  const kv = head.groups.length > 0;
  const top = 34 + 14 * notes.length + 8, left = 24 + 16 + yText + 8, right = 24 + 16 + 6 + barText + 8;
  const bottom = 6 + TICK_PX * (kv ? 2 : 1) + 6 + 24;
  const unit = Math.max(4, Math.min((width - left - right) / head.heads, (height - top - bottom) / head.layers));
  const x0 = left + Math.max(0, (width - left - right - unit * head.heads) / 2);
  return { notes, bar, top, bottom, unit, x0, y0: top, yText, kv, xs: every(head.heads, unit), ys: every(head.layers, unit) };
}

function gridDraw(ctx, grid, width, height, colours, bare = false) {
  const { head } = grid, L = gridLayout(ctx, grid, width, height, bare), { x0, y0, unit } = L;
  const W = unit * head.heads, H = unit * head.layers, px = unit / (head.thumb + head.gap), g = (head.gap / 2) * px;
  ctx.clearRect(0, 0, width, height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(grid.image, 0, 0, grid.cols, grid.rows, x0 + g, y0 + g, grid.cols * px, grid.rows * px);
  heading(ctx, head.title, L.notes, colours);
  marks(ctx, head, L);
  ctx.font = `12px ${FONT}`;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const l of L.ys) ctx.fillText(String(l), x0 - 6, y0 + (l + 0.5) * unit);
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const h of L.xs) {
    ctx.fillStyle = colours.label;
    ctx.fillText(String(h), x0 + (h + 0.5) * unit, y0 + H + 6);
    const kv = head.kv[h];
    if (!kv) continue;
    ctx.fillStyle = kv[1];
    ctx.fillText(kv[0], x0 + (h + 0.5) * unit, y0 + H + 6 + TICK_PX);
  }
  ctx.fillStyle = colours.label;
  ctx.font = `14px ${FONT}`;
  ctx.textBaseline = "alphabetic";
  ctx.fillText(head.xtitle, x0 + W / 2, y0 + H + L.bottom - 6);
  ctx.save();
  ctx.translate(Math.max(14, x0 - 6 - L.yText - 14), y0 + H / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(head.ytitle, 0, 0);
  ctx.restore();
  const at = { x: x0 + W + 24, y: y0 + 20, h: Math.max(20, H - 20) };
  colourbar(ctx, { ...at, lo: grid.lo, hi: grid.hi, lut: grid.colours, ticks: L.bar, title: head.bar }, colours);
  return L;
}

function marks(ctx, head, L) {
  // mark_groups' outlines, the focus outline (model_view) and mark_off's crosses, in plot units:
  // cell (layer, head) spans [head - 0.5, head + 0.5] x [layer - 0.5, layer + 0.5].
  const { x0, y0, unit } = L, X = (h) => x0 + (h + 0.5) * unit, Y = (l) => y0 + (l + 0.5) * unit;
  ctx.lineWidth = 2;
  for (const group of head.groups) {
    const lo = Math.min(...group.heads), hi = Math.max(...group.heads);
    ctx.strokeStyle = group.colour;
    ctx.strokeRect(X(lo - 0.48), Y(-0.5), (hi - lo + 0.96) * unit, head.layers * unit);
  }
  ctx.lineWidth = 3;
  if (head.focus) {
    ctx.strokeStyle = head.focus_colour;
    ctx.strokeRect(X(head.focus[1] - 0.5), Y(head.focus[0] - 0.5), unit, unit);
  }
  ctx.strokeStyle = head.off_colour;
  for (const [l, h] of head.off) {
    ctx.beginPath();
    ctx.moveTo(X(h - 0.35), Y(l - 0.35));
    ctx.lineTo(X(h + 0.35), Y(l + 0.35));
    ctx.moveTo(X(h - 0.35), Y(l + 0.35));
    ctx.lineTo(X(h + 0.35), Y(l - 0.35));
    ctx.stroke();
  }
}

export default function ({ data, parentElement, setTriggerValue }) {
  let born = performance.now();
  const grid = parse(data, "AVG1"), head = grid.head;
  grid.colours = lut(head.scale);
  [grid.lo, grid.hi] = [head.zmin, head.zmax];
  grid.image = cells(grid);
  const { root, canvas, tip } = mount(parentElement, "attnviz-map attnviz-grid", head);
  root.dataset.attnvizGrid = "";
  let L = null;

  function render() {
    born = born === null ? performance.now() : born;
    const w = chartWidth(root, parentElement);
    const whole = gridLayout(canvas.getContext("2d"), grid, w, head.height);
    const used = Math.min(head.height, Math.ceil(whole.y0 + whole.unit * head.layers + whole.bottom + 4));
    const ctx = fitted(canvas, w, used), colours = palette(grid, parentElement);
    L = gridDraw(ctx, grid, w, used, colours);
    root.__attnvizText = [head.title, ...L.notes, head.xtitle, head.ytitle, head.bar, ...L.xs.map(String),
      ...L.ys.map(String), ...head.kv.filter((k) => k).map((k) => k[0]), ...L.bar.map(([, s]) => s)];
    root.__attnvizLayout = { x0: L.x0, y0: L.y0, unit: L.unit, layers: head.layers, heads: head.heads };
    root.classList.add("attnviz-grid-drawn");
    announce(root, colours, born);
    born = null;
  }

  function cell(event) {
    const r = canvas.getBoundingClientRect(), x = event.clientX - r.left, y = event.clientY - r.top;
    if (!L) return null;
    const h = Math.floor((x - L.x0) / L.unit), l = Math.floor((y - L.y0) / L.unit);
    if (h < 0 || l < 0 || h >= head.heads || l >= head.layers) return null;
    return { layer: l, head: h, x, y };
  }

  function hover(event) {
    const at = cell(event);
    canvas.style.cursor = at ? "pointer" : "default";
    if (!at) {
      tip.style.display = "none";
      delete root.dataset.hover;
      return;
    }
    tip.textContent = head.hover[at.layer * head.heads + at.head].join("\n");
    tip.style.display = "block";
    tip.style.left = `${Math.max(0, Math.min(at.x + 14, root.clientWidth - tip.offsetWidth - 4))}px`;
    tip.style.top = `${at.y + 14}px`;
    root.dataset.hover = `${at.layer},${at.head}`;
  }

  function click(event) {
    const at = cell(event);
    if (at && event.button === 0) setTriggerValue("click", { layer: at.layer, head: at.head });
  }

  root.__attnvizMap = grid;
  root.__attnvizImage = (format, caption, width, h, scale, room, font, bare = false) => {
    const colours = palette(grid, parentElement);
    return image(format, caption, width, h, scale, room, font, colours, (ctx) => gridDraw(ctx, grid, width, h, colours, bare));
  };
  canvas.addEventListener("mousemove", hover);
  canvas.addEventListener("click", click);
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; delete root.dataset.hover; });
  return follow(root, head.after, render);
}
