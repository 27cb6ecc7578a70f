// Lets the pinned MCP conformance suite (0.1.16) run on Node 20: it imports
// fs.globSync, which only Node 22 has, at load time (the server scenarios
// never call it).  Registered with `node --import`, this hook hands the
// suite an `fs` that is Node's own plus a globSync that throws if used.
import { register } from 'node:module';

if (!(await import('node:fs')).globSync) {
  register('data:text/javascript,' + encodeURIComponent(`
    export async function resolve(spec, ctx, next) {
      if ((spec === 'fs' || spec === 'node:fs') && ctx.parentURL && ctx.parentURL.includes('/conformance/'))
        return { url: 'cloche-fs-shim:fs', shortCircuit: true };
      return next(spec, ctx);
    }
    export async function load(url, ctx, next) {
      if (url === 'cloche-fs-shim:fs')
        return { format: 'module', shortCircuit: true, source:
          "import fs from 'node:fs'; export * from 'node:fs'; export default fs;" +
          "export function globSync() { throw new Error('fs.globSync needs Node 22'); }" };
      return next(url, ctx);
    }`));
}
