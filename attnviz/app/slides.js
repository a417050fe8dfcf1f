// The PNG and SVG buttons under every chart (app/charts.py image_buttons): one click handler for
// the page (the page is one document), installed once. A slide is 16:9, `width` x `slideHeight`
// css px (a PNG `scale` px per css px: 1920 x 1080), on the theme's opaque background: the chart
// drawn at its own size (plotly.js's toImage, or a canvas chart's __attnvizImage without its
// click hints), cropped to what it drew, scaled down to fit and centred, and under it the
// caption's lines (plain text: the model, the sentence, the switches), drawn as text.
(() => {
  if (window.__attnvizImages) return;
  window.__attnvizImages = true;
  const PAD = 16, LINE = 18, FONT_PX = 13, SVG = "http://www.w3.org/2000/svg";

  const chartOf = (button) => {
    const key = button.dataset.chart;
    const keyed = key && document.querySelector(".st-key-" + CSS.escape(key) + " .js-plotly-plot");
    if (keyed) return keyed;
    const box = button.closest('[data-testid="stElementContainer"]');
    for (let el = box && box.previousElementSibling; el; el = el.previousElementSibling) {
      const gd = el.querySelector(".js-plotly-plot");
      if (gd) return gd;
    }
    return null;
  };

  const rgb = (colour) => {
    // "#rrggbb", "#rgb" or "rgb(a)(r, g, b...)" -> [r, g, b]; null for anything else
    const c = String(colour || "").trim();
    let m = c.match(/^#([0-9a-f]{6})$/i);
    if (m) return [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16));
    m = c.match(/^#([0-9a-f]{3})$/i);
    if (m) return [0, 1, 2].map((i) => parseInt(m[1][i] + m[1][i], 16));
    m = c.match(/^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)\s*(?:[,/]\s*([\d.]+%?))?\s*\)$/i);
    if (m && (m[4] === undefined || parseFloat(m[4]) > 0)) return [m[1], m[2], m[3]].map(Number);
    return null;
  };

  const background = (el, fallback) => {
    // The page's background as the visitor sees it (Streamlit's variable), else the chart's own
    const own = getComputedStyle(el).getPropertyValue("--st-background-color");
    return rgb(own) || rgb(fallback) || [255, 255, 255];
  };

  const load = (url) => new Promise((ok, fail) => {
    const img = new Image();
    img.onload = () => ok(img);
    img.onerror = fail;
    img.src = url;
  });

  const drawn = (img, bg) => {
    // The box of what the chart drew: pixels that are neither transparent nor the background
    const c = document.createElement("canvas");
    c.width = img.naturalWidth; c.height = img.naturalHeight;
    const ctx = c.getContext("2d");
    ctx.drawImage(img, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    let x0 = c.width, y0 = c.height, x1 = -1, y1 = -1;
    for (let y = 0; y < c.height; y++) {
      for (let x = 0; x < c.width; x++) {
        const i = 4 * (y * c.width + x);
        if (px[i + 3] < 16) continue;
        if (Math.abs(px[i] - bg[0]) + Math.abs(px[i + 1] - bg[1]) + Math.abs(px[i + 2] - bg[2]) < 24) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
      }
    }
    return x1 < 0 ? [0, 0, c.width, c.height] : [x0, y0, x1 + 1 - x0, y1 + 1 - y0];
  };

  const fontFamily = () => getComputedStyle(document.body).fontFamily || "sans-serif";

  const fitted = (ctx, text, max) => {
    // The line at 13 px, down to 10 px where it is too wide, then cut with "…"
    for (let size = FONT_PX; size >= 10; size--) {
      ctx.font = `${size}px ${fontFamily()}`;
      if (ctx.measureText(text).width <= max) return [text, size];
    }
    const chars = Array.from(text);
    while (chars.length && ctx.measureText(chars.join("") + "…").width > max) chars.pop();
    return [chars.join("") + "…", 10];
  };

  async function slide(format, chartPng, chartSvg, scale, lines, bg, W, H) {
    const img = await load(chartPng);
    const [bx, by, bw, bh] = drawn(img, bg).map((v) => v / scale);  // css px of the chart
    const room = lines.length ? 8 + LINE * lines.length : 0;
    const boxW = W - 2 * PAD, boxH = H - 2 * PAD - room;
    const s = Math.min(1, boxW / bw, boxH / bh);
    const w = bw * s, h = bh * s, x = (W - w) / 2, y = PAD + (boxH - h) / 2;
    const fill = `rgb(${bg.join(",")})`;
    const dark = 0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2] < 128;
    const ink = dark ? "#B5B0AA" : "#555555";
    const measure = document.createElement("canvas").getContext("2d");
    const shown = lines.map((line) => fitted(measure, line, W - 2 * PAD));
    const top = H - PAD - LINE * lines.length;
    if (format === "png") {
      const canvas = document.createElement("canvas");
      canvas.width = Math.round(W * scale);
      canvas.height = Math.round(H * scale);
      const ctx = canvas.getContext("2d");
      ctx.scale(scale, scale);
      ctx.fillStyle = fill;
      ctx.fillRect(0, 0, W, H);
      ctx.drawImage(img, bx * scale, by * scale, bw * scale, bh * scale, x, y, w, h);
      ctx.fillStyle = ink;
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      shown.forEach(([text, size], i) => {
        ctx.font = `${size}px ${fontFamily()}`;
        ctx.fillText(text, W / 2, top + LINE * i);
      });
      return canvas.toDataURL("image/png");
    }
    const doc = document.implementation.createDocument(SVG, "svg", null);
    const root = doc.documentElement;
    for (const [k, v] of Object.entries({ width: W, height: H, viewBox: `0 0 ${W} ${H}` })) root.setAttribute(k, String(v));
    const title = doc.createElementNS(SVG, "title");
    title.textContent = lines.join(" · ");
    root.append(title);
    const rect = doc.createElementNS(SVG, "rect");
    for (const [k, v] of Object.entries({ x: 0, y: 0, width: W, height: H, fill: fill })) rect.setAttribute(k, String(v));
    root.append(rect);
    const source = decodeURIComponent(chartSvg.slice(chartSvg.indexOf(",") + 1));
    const chart = doc.importNode(new DOMParser().parseFromString(source, "image/svg+xml").documentElement, true);
    for (const [k, v] of Object.entries({ x: x, y: y, width: w, height: h, viewBox: `${bx} ${by} ${bw} ${bh}`,
      preserveAspectRatio: "xMidYMid meet" })) chart.setAttribute(k, String(v));
    root.append(chart);
    shown.forEach(([text, size], i) => {
      const el = doc.createElementNS(SVG, "text");
      for (const [k, v] of Object.entries({ x: W / 2, y: top + LINE * i, fill: ink, "text-anchor": "middle",
        "dominant-baseline": "hanging", style: `font: ${size}px ${fontFamily()}; white-space: pre` })) el.setAttribute(k, String(v));
      el.textContent = text;
      root.append(el);
    });
    return "data:image/svg+xml;charset=utf-8," + encodeURIComponent(new XMLSerializer().serializeToString(doc));
  }

  async function chartImages(d, format, scale, map, gd) {
    // The chart at its own size: a PNG (for the crop, and the slide's pixels) and an SVG if asked
    const W = Number(d.width), h = Number(d.height);
    if (map) {  // a canvas chart (app/canvas/token_canvas.py, app/canvas/grid_canvas.py)
      const png = map.__attnvizImage("png", "", W, h, scale, 0, {}, true);
      const svg = format === "svg" ? map.__attnvizImage("svg", "", W, h, 1, 0, {}, true) : null;
      return { png, svg, bg: background(map, null) };
    }
    const Plotly = window.Plotly;
    const bg = background(gd, gd._fullLayout.paper_bgcolor);
    const layout = Object.assign({}, gd.layout, { paper_bgcolor: `rgb(${bg.join(",")})` });
    delete layout.width; delete layout.height;
    if (d.title !== undefined) layout.title = Object.assign({}, gd.layout.title || {}, { text: d.title });
    const figure = { data: gd.data, layout: layout };
    const png = await Plotly.toImage(figure, { format: "png", width: W, height: h, scale: scale });
    const svg = format === "svg" ? await Plotly.toImage(figure, { format: "svg", width: W, height: h }) : null;
    return { png, svg, bg };
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("[data-attnviz-image]");
    if (!button) return;
    const d = button.dataset, format = d.attnvizImage, scale = Number(d.scale);
    const found = d.chart && document.querySelector(".st-key-" + CSS.escape(d.chart) + " [data-attnviz-map]");
    const map = found && found.__attnvizImage ? found : null, gd = map ? null : chartOf(button);
    if (!map && (!gd || !window.Plotly || !gd._fullLayout)) { d.state = "unavailable"; return; }
    let lines = [];
    try { lines = JSON.parse(d.caption || "[]").map(String); } catch (e) { lines = []; }
    d.state = "working";
    chartImages(d, format, scale, map, gd)
      .then(({ png, svg, bg }) => slide(format, png, svg, scale, lines, bg, Number(d.width), Number(d.slideHeight)))
      .then((url) => {
        const a = document.createElement("a");
        a.href = url; a.download = d.name + "." + format;
        document.body.appendChild(a); a.click(); a.remove();
        d.state = "done";
      })
      .catch(() => { d.state = "failed"; });
  });
})();
