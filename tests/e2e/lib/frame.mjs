// Measures an RGBA frame of the sandbox desktop: how many colours it has,
// how much of it one colour covers, whether Chromium's light toolbar sits
// above the start page's blue gradient, where the page's white text field
// is, and how much dark "ink" a box holds.  The functions are
// self-contained so they can run inside the browser page (next to the
// canvas) via inPage(): moving 4 MB of pixels over CDP is far slower.
export function frameStats(w, h, data, box) {
  const at = (x, y) => (y * w + x) * 4;
  const counts = new Map();
  for (let i = 0; i < w * h * 4; i += 4 * 7) {
    // 4 bits per channel: JPEG noise must not count as colours.
    const k = ((data[i] >> 4) << 8) | ((data[i + 1] >> 4) << 4) | (data[i + 2] >> 4);
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  const dominant = Math.max(...counts.values()) / Math.ceil((w * h) / 7);

  // Toolbar: Chromium draws light colours across the top ~80 px.
  let light = 0; let total = 0;
  for (let y = 5; y < Math.min(80, h); y += 4) {
    for (let x = 0; x < w; x += 8) {
      const i = at(x, y);
      total++;
      if (data[i] > 180 && data[i + 1] > 180 && data[i + 2] > 180) light++;
    }
  }
  // Page: the start page is a blue gradient (blue well above red).
  let blue = 0; let ptotal = 0;
  for (let y = Math.floor(h * 0.3); y < h - 10; y += 8) {
    for (let x = 0; x < w; x += 8) {
      const i = at(x, y);
      ptotal++;
      if (data[i + 2] > data[i] + 40) blue++;
    }
  }
  // The text field: the first band of rows below the toolbar where a long
  // stretch is near white (text never makes stretches that long).
  const wideWhite = (y) => {
    let run = 0; let best = 0; let bx0 = 0; let start = 0;
    for (let x = 0; x < w; x++) {
      const i = at(x, y);
      if (data[i] > 235 && data[i + 1] > 235 && data[i + 2] > 235) {
        if (run++ === 0) start = x;
        if (run > best) { best = run; bx0 = start; }
      } else run = 0;
    }
    return best >= 250 ? [bx0, bx0 + best - 1] : null;
  };
  // Bands of consecutive such rows; the tallest is the field (a focus
  // ring adds thin white bands around it).
  let field = null;
  let band = null;
  for (let y = 120; y <= h; y++) {
    const r = y < h ? wideWhite(y) : null;
    if (r && band) {
      band.y1 = y;
      band.x0 = Math.min(band.x0, r[0]);
      band.x1 = Math.max(band.x1, r[1]);
    } else if (r) {
      band = { x0: r[0], x1: r[1], y0: y, y1: y };
    } else if (band) {
      if (band.y1 - band.y0 >= 15 && (!field || band.y1 - band.y0 > field.y1 - field.y0)) field = band;
      band = null;
    }
  }
  let ink = 0;
  if (box) {
    for (let y = box.y0 + 3; y <= box.y1 - 3; y++) {
      for (let x = box.x0 + 3; x <= box.x1 - 3; x++) {
        const i = at(x, y);
        if (data[i] < 140 && data[i + 1] < 140 && data[i + 2] < 140) ink++;
      }
    }
  }
  return { w, h, colours: counts.size, dominant, toolbarLight: light / total, pageBlue: blue / ptotal, field, ink };
}

// A desktop showing Chromium with the start page: varied, not one colour,
// a light toolbar on top and a blue page below.
export function looksLikeDesktop(st) {
  return st.colours >= 20 && st.dominant < 0.9 && st.toolbarLight > 0.5 && st.pageBlue > 0.5;
}

// Runs frameStats in the page on a canvas (a CSS selector), or on an image
// given as a data: URL drawn onto a fresh canvas.
export async function statsInPage(page, { selector, imageUrl, box }) {
  return page.evaluate(async ([src, sel, url, b]) => {
    const stats = new Function(`return ${src}`)();
    let c = sel ? document.querySelector(sel) : null;
    if (url) {
      const img = new Image();
      img.src = url;
      await img.decode();
      c = document.createElement('canvas');
      c.width = img.width; c.height = img.height;
      c.getContext('2d').drawImage(img, 0, 0);
    }
    if (!c) return null;
    const g = c.getContext('2d');
    const r = c.getBoundingClientRect();
    const s = stats(c.width, c.height, g.getImageData(0, 0, c.width, c.height).data, b);
    // CSS box of the canvas: noVNC may scale it (resize=scale).
    return { ...s, left: r.x, top: r.y, scaleX: r.width / c.width, scaleY: r.height / c.height };
  }, [frameStats.toString(), selector || null, imageUrl || null, box || null]);
}
