// A small PNG decoder for the end-to-end tests, so a screenshot an MCP server
// returns can be measured without a browser.
import { inflateSync } from 'node:zlib';

// PNG -> {w, h, data: RGBA}.  Handles what mcp-desktop writes (8-bit RGB or
// RGBA, not interlaced) with all five row filters.
export function decodePng(buf) {
  if (buf.readUInt32BE(0) !== 0x89504e47 || buf.readUInt32BE(4) !== 0x0d0a1a0a) throw new Error('not a PNG');
  let off = 8; let w = 0; let h = 0; let ct = 0; const idat = [];
  while (off < buf.length) {
    const len = buf.readUInt32BE(off); const type = buf.toString('latin1', off + 4, off + 8);
    const body = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      w = body.readUInt32BE(0); h = body.readUInt32BE(4); ct = body[9];
      if (body[8] !== 8 || (ct !== 2 && ct !== 6) || body[12] !== 0) throw new Error('unsupported PNG format');
    } else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    off += 12 + len;
  }
  const bpp = ct === 2 ? 3 : 4; const stride = w * bpp;
  const raw = inflateSync(Buffer.concat(idat));
  if (raw.length !== h * (stride + 1)) throw new Error(`PNG data is ${raw.length} bytes, want ${h * (stride + 1)}`);
  const cur = new Uint8Array(h * stride);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (stride + 1)]; const src = y * (stride + 1) + 1; const o = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? cur[o + x - bpp] : 0; const b = y ? cur[o - stride + x] : 0;
      const c = x >= bpp && y ? cur[o - stride + x - bpp] : 0; let v = raw[src + x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) { const p = a + b - c; const pa = Math.abs(p - a); const pb = Math.abs(p - b); const pc = Math.abs(p - c); v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c; } else if (f !== 0) throw new Error(`bad filter ${f}`);
      cur[o + x] = v & 255;
    }
  }
  const data = new Uint8Array(w * h * 4);
  for (let i = 0, j = 0; i < w * h; i++, j += bpp) {
    data[i * 4] = cur[j]; data[i * 4 + 1] = cur[j + 1]; data[i * 4 + 2] = cur[j + 2]; data[i * 4 + 3] = 255;
  }
  return { w, h, data };
}
