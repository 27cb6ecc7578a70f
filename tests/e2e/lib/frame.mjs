// Measures an RGBA frame ({w, h, data}) of the sandbox desktop: how many
// colours it has, how much of it one colour covers, whether Chromium's
// light toolbar sits above the start page's blue gradient, and where the
// page's white text field is.  Shared by the VNC and noVNC checks.
export function frameStats({ w, h, data }) {
  const px = (x, y) => {
    const i = (y * w + x) * 4;
    return [data[i], data[i + 1], data[i + 2]];
  };
  const counts = new Map();
  for (let i = 0; i < w * h * 4; i += 4 * 7) {
    // 4 bits per channel: JPEG noise must not count as colours.
    const k = ((data[i] >> 4) << 8) | ((data[i + 1] >> 4) << 4) | (data[i + 2] >> 4);
    counts.set(k, (counts.get(k) || 0) + 1);
  }
  const samples = Math.ceil((w * h) / 7);
  const dominant = Math.max(...counts.values()) / samples;

  // Toolbar: Chromium draws light grey/white across the top ~80 px.
  let light = 0;
  let total = 0;
  for (let y = 5; y < Math.min(80, h); y += 4) {
    for (let x = 0; x < w; x += 8) {
      const [r, g, b] = px(x, y);
      total++;
      if (r > 180 && g > 180 && b > 180) light++;
    }
  }
  // Page: the start page is a blue gradient (blue above red).
  let blue = 0;
  let ptotal = 0;
  for (let y = Math.floor(h * 0.3); y < h - 10; y += 8) {
    for (let x = 0; x < w; x += 8) {
      const [r, , b] = px(x, y);
      ptotal++;
      if (b > r + 40) blue++;
    }
  }
  // The text field: bounding box of near-white pixels below the toolbar,
  // in the middle third of the screen.
  let x0 = w; let y0 = h; let x1 = -1; let y1 = -1;
  for (let y = 120; y < h; y += 2) {
    for (let x = Math.floor(w * 0.2); x < Math.floor(w * 0.8); x += 2) {
      const [r, g, b] = px(x, y);
      if (r > 235 && g > 235 && b > 235) {
        x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y);
      }
    }
  }
  const whiteBox = x1 > x0 + 100 && y1 > y0 + 15 && y1 - y0 < 120 ? { x0, y0, x1, y1 } : null;
  const inkIn = (b) => {
    let n = 0;
    for (let y = b.y0 + 2; y <= b.y1 - 2; y++) {
      for (let x = b.x0 + 2; x <= b.x1 - 2; x++) {
        const [r, g, bb] = px(x, y);
        if (r < 140 && g < 140 && bb < 140) n++;
      }
    }
    return n;
  };
  return { colours: counts.size, dominant, toolbarLight: light / total, pageBlue: blue / ptotal, whiteBox, inkIn };
}

// A desktop showing Chromium with the start page: varied, not one colour,
// a light toolbar on top and a blue page below.
export function looksLikeDesktop(st) {
  return st.colours >= 20 && st.dominant < 0.9 && st.toolbarLight > 0.5 && st.pageBlue > 0.5;
}
