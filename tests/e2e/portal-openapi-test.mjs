// Checks cloche-portal against the OpenAPI document it serves: every
// documented operation is called (with inputs that reach its documented
// answers), every answer's status must be documented for that operation and
// its JSON body must validate against the documented schema (ajv, JSON Schema
// 2020-12 as OpenAPI 3.1 uses).  And every route the server registers is in
// the document (--routes: "METHOD PATH" lines from the source).
// Prints TAP lines; needs a portal with at least one node up.
//
//   node portal-openapi-test.mjs --url URL --key ADMIN_KEY --routes FILE [--node-cred C]
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { parseArgs, tap, check } from './lib/tap.mjs';

const args = parseArgs();
const base = args.url, admin = args.key;

const doc = await (await fetch(`${base}/sbv1/openapi.json`)).json();
check(doc.openapi === '3.1.0', 'the document is OpenAPI 3.1');
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
const rewrite = (s) => JSON.parse(JSON.stringify(s).replaceAll('"#/components/', '"doc#/components/'));

const seen = new Map(); // "METHOD path" -> set of statuses exercised
async function call(method, tmpl, path, { key = admin, body, headers = {} } = {}) {
	const h = { ...headers };
	if (key) h.authorization = `Bearer ${key}`;
	if (body !== undefined) h['content-type'] = 'application/json';
	const r = await fetch(base + path, { method, headers: h,
		body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
	const text = await r.text();
	const op = doc.paths[tmpl]?.[method.toLowerCase()];
	const name = `${method} ${tmpl} -> ${r.status}`;
	if (!op) { check(false, `${name}: operation is documented`); return { status: r.status }; }
	const resp = op.responses[String(r.status)];
	check(!!resp, `${name}: status is documented`);
	if (!seen.has(`${method} ${tmpl}`)) seen.set(`${method} ${tmpl}`, new Set());
	seen.get(`${method} ${tmpl}`).add(r.status);
	let json;
	const ctype = r.headers.get('content-type') || '';
	if (resp?.content?.['application/json']) {
		try { json = JSON.parse(text); } catch { check(false, `${name}: body is JSON`); return { status: r.status }; }
		const v = ajv.compile(rewrite(resp.content['application/json'].schema));
		check(v(json), `${name}: body matches the schema${v.errors ? ' ' + JSON.stringify(v.errors.slice(0, 2)) : ''}`);
	} else if (resp?.content?.['text/plain']) {
		check(ctype.startsWith('text/plain'), `${name}: text/plain`);
	}
	return { status: r.status, json, headers: r.headers };
}

// No key, a bad body, a field of the wrong type, an unknown template.
await call('GET', '/healthz', '/healthz', { key: null });
await call('GET', '/metrics', '/metrics', { key: null });
await call('GET', '/sbv1/openapi.json', '/sbv1/openapi.json', { key: null });
await call('GET', '/sbv1/sandboxes', '/sbv1/sandboxes', { key: null });
await call('POST', '/sbv1/acquire', '/sbv1/acquire', { body: '{"ttl":' });
await call('POST', '/sbv1/acquire', '/sbv1/acquire', { body: { ttl: 'long' } });
await call('POST', '/sbv1/acquire', '/sbv1/acquire', { body: { template: 'no-such-template' } });
// A real sandbox through its life.
const a = await call('POST', '/sbv1/acquire', '/sbv1/acquire', { body: { ttl: 120, labels: { suite: 'openapi' } } });
check(a.status === 201, 'acquire made a sandbox');
const id = a.json?.id;
await call('GET', '/sbv1/sandboxes', '/sbv1/sandboxes?label=suite%3Dopenapi&limit=1');
await call('GET', '/sbv1/sandboxes', '/sbv1/sandboxes?state=bogus');
await call('GET', '/sbv1/sandboxes/{id}', `/sbv1/sandboxes/${id}`);
await call('GET', '/sbv1/sandboxes/{id}', '/sbv1/sandboxes/sb-0000000000000000');
await call('GET', '/sbv1/sandboxes/{id}/events', `/sbv1/sandboxes/${id}/events`);
// A mini sandbox has no mcp-desktop: its thumbnail is a 502 (the dashboard's
// test gets real pictures from desktops).
await call('GET', '/sbv1/sandboxes/{id}/thumbnail', `/sbv1/sandboxes/${id}/thumbnail?width=5`);
await call('GET', '/sbv1/sandboxes/{id}/thumbnail', `/sbv1/sandboxes/${id}/thumbnail`);
await call('GET', '/sbv1/sandboxes/{id}/thumbnail', '/sbv1/sandboxes/sb-0000000000000000/thumbnail');
// recordings: a mini sandbox has no recorder (its node answers 502) and
// nothing recorded; the real thing is tests/integration/test-record.sh.
await call('GET', '/sbv1/sandboxes/{id}/recordings', `/sbv1/sandboxes/${id}/recordings`);
await call('GET', '/sbv1/sandboxes/{id}/recordings', '/sbv1/sandboxes/sb-0000000000000000/recordings');
await call('POST', '/sbv1/sandboxes/{id}/recordings', `/sbv1/sandboxes/${id}/recordings`);
await call('POST', '/sbv1/sandboxes/{id}/recordings', '/sbv1/sandboxes/sb-0000000000000000/recordings');
await call('GET', '/sbv1/sandboxes/{id}/recordings/{rec}', `/sbv1/sandboxes/${id}/recordings/rec-none`);
await call('GET', '/sbv1/sandboxes/{id}/recordings/{rec}', `/sbv1/sandboxes/${id}/recordings/nope`);
await call('POST', '/sbv1/sandboxes/{id}/recordings/{rec}/stop', `/sbv1/sandboxes/${id}/recordings/rec-none/stop`);
await call('POST', '/sbv1/sandboxes/{id}/recordings/{rec}/stop', '/sbv1/sandboxes/sb-0000000000000000/recordings/rec-none/stop');
await call('GET', '/sbv1/sandboxes/{id}/trace', `/sbv1/sandboxes/${id}/trace`);
await call('GET', '/sbv1/sandboxes/{id}/trace', '/sbv1/sandboxes/sb-0000000000000000/trace');
// share links: made, listed, shown, refused, revoked
const share = await call('POST', '/sbv1/sandboxes/{id}/shares', `/sbv1/sandboxes/${id}/shares`, { body: { ttl: 60, label: 'openapi' } });
await call('POST', '/sbv1/sandboxes/{id}/shares', `/sbv1/sandboxes/${id}/shares`, { body: { mode: 'edit' } });
await call('POST', '/sbv1/sandboxes/{id}/shares', '/sbv1/sandboxes/sb-0000000000000000/shares', { body: {} });
await call('GET', '/sbv1/sandboxes/{id}/shares', `/sbv1/sandboxes/${id}/shares`);
await call('GET', '/sbv1/sandboxes/{id}/shares', '/sbv1/sandboxes/sb-0000000000000000/shares');
await call('GET', '/sbv1/sandboxes/{id}/shares/{share}', `/sbv1/sandboxes/${id}/shares/${share.json?.id}`);
await call('GET', '/sbv1/sandboxes/{id}/shares/{share}', `/sbv1/sandboxes/${id}/shares/sh_none`);
await call('DELETE', '/sbv1/sandboxes/{id}/shares/{share}', `/sbv1/sandboxes/${id}/shares/${share.json?.id}`);
await call('DELETE', '/sbv1/sandboxes/{id}/shares/{share}', `/sbv1/sandboxes/${id}/shares/${share.json?.id}`);
await call('POST', '/sbv1/sandboxes/{id}/keepalive', `/sbv1/sandboxes/${id}/keepalive`, { body: { ttl: 60 } });
await call('POST', '/sbv1/sandboxes/{id}/keepalive', `/sbv1/sandboxes/${id}/keepalive`, { body: { ttl: 0 } });
for (const act of ['hibernate', 'wake', 'fork'])
	await call('POST', `/sbv1/sandboxes/{id}/${act}`, `/sbv1/sandboxes/${id}/${act}`, { body: act === 'fork' ? { count: 2 } : undefined });
await call('POST', '/sbv1/sandboxes/{id}/release', `/sbv1/sandboxes/${id}/release`);
await call('POST', '/sbv1/sandboxes/{id}/release', `/sbv1/sandboxes/${id}/release`);
await call('POST', '/sbv1/sandboxes/{id}/shares', `/sbv1/sandboxes/${id}/shares`, { body: {} }); // 409: released
await call('GET', '/sbv1/sandboxes/{id}/thumbnail', `/sbv1/sandboxes/${id}/thumbnail`);
await call('POST', '/sbv1/sandboxes/{id}/keepalive', `/sbv1/sandboxes/${id}/keepalive`, { body: {} });
await call('GET', '/sbv1/nodes', '/sbv1/nodes');
await call('GET', '/sbv1/templates', '/sbv1/templates');
const k = await call('POST', '/sbv1/keys', '/sbv1/keys', { body: { name: 'openapi-user', role: 'user' } });
await call('POST', '/sbv1/keys', '/sbv1/keys', { body: { name: 'x', role: 'root' } });
await call('GET', '/sbv1/nodes', '/sbv1/nodes', { key: k.json?.key }); // 403
await call('GET', '/sbv1/keys', '/sbv1/keys');
await call('DELETE', '/sbv1/keys/{id}', `/sbv1/keys/${k.json?.id}`);
await call('DELETE', '/sbv1/keys/{id}', '/sbv1/keys/000000000000');
await call('POST', '/sbv1/nodes/heartbeat', '/sbv1/nodes/heartbeat', { key: 'wrong-credential', body: {} });

// What proxies call, with the node credential (--node-cred).
const cred = args['node-cred'];
await call('GET', '/sbv1/routes', '/sbv1/routes', { key: 'wrong-credential' });
if (cred) {
	const list = await call('GET', '/sbv1/sandboxes', '/sbv1/sandboxes');
	const some = list.json?.sandboxes?.[0]?.id || 'sb-0000000000000000';
	await call('GET', '/sbv1/routes', '/sbv1/routes?after=0', { key: cred });
	await call('GET', '/sbv1/routes/{id}', `/sbv1/routes/${some}`, { key: cred });
	await call('GET', '/sbv1/routes/{id}', '/sbv1/routes/sb-0000000000000000', { key: cred });
	await call('POST', '/sbv1/routes/{id}/wake', `/sbv1/routes/${some}/wake`, { key: cred });
	await call('POST', '/sbv1/routes/{id}/wake', '/sbv1/routes/sb-0000000000000000/wake', { key: cred });
	await call('POST', '/sbv1/routes/activity', '/sbv1/routes/activity',
		{ key: cred, body: { node: 'openapi-none', proxy: '', sandboxes: [{ id: some, requests: 1, idle_ms: 5 }] } });
	await call('POST', '/sbv1/routes/activity', '/sbv1/routes/activity', { key: cred, body: { node: 1 } });
}

// Every operation of the document was called, and every route of the
// server is in the document.
for (const [p, ops] of Object.entries(doc.paths))
	for (const m of Object.keys(ops))
		check(seen.has(`${m.toUpperCase()} ${p}`), `${m.toUpperCase()} ${p} was exercised`);
if (args.routes) {
	for (const line of readFileSync(args.routes, 'utf8').split('\n').filter(Boolean)) {
		const [m, p] = line.split(' ');
		const docPaths = Object.keys(doc.paths).filter((d) => p.endsWith('*')
			? d.startsWith(p.slice(0, -1)) : d === p);
		const methods = docPaths.flatMap((d) => Object.keys(doc.paths[d]).map((x) => x.toUpperCase()));
		check(docPaths.length > 0 && (m === 'ANY' || methods.includes(m)), `server route ${m} ${p} is documented`);
	}
}
tap.exit();
