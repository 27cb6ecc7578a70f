// Checks Kubernetes manifests against the Kubernetes API schemas (the
// validators kubernetes-models generates from the OpenAPI document), with
// no cluster: every document of every file must be a known kind whose
// object validates (types, required fields, enums, formats).  Unknown
// fields are not flagged (like kubeconform without -strict).  A
// kustomization.yaml must list files that exist.
//   node k8s-validate.mjs FILE...     ok/not ok per document; exit 1 on any failure
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, basename } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { tap, ok, notOk } from './lib/tap.mjs';

const groups = { v1: 'v1', 'apps/v1': 'apps/v1', 'networking.k8s.io/v1': 'networking.k8s.io/v1',
  'policy/v1': 'policy/v1', 'rbac.authorization.k8s.io/v1': 'rbac.authorization.k8s.io/v1' };

for (const file of process.argv.slice(2)) {
  let docs;
  try {
    docs = parseAllDocuments(readFileSync(file, 'utf8'));
  } catch (e) { notOk(`${file}: readable YAML`, e.message); continue; }
  for (const [i, d] of docs.entries()) {
    const where = `${basename(file)}#${i + 1}`;
    if (d.errors.length) { notOk(`${where}: YAML`, d.errors[0].message); continue; }
    const o = d.toJS();
    if (!o) continue;
    if (o.kind === 'Kustomization') {
      const missing = (o.resources || []).filter((r) => !existsSync(join(dirname(file), r)));
      if (missing.length) notOk(`${where}: kustomization lists files that exist`, missing.join(', '));
      else ok(`${where}: Kustomization of ${(o.resources || []).length} files`);
      continue;
    }
    const mod = groups[o.apiVersion];
    if (!mod) { notOk(`${where}: a known apiVersion`, `${o.apiVersion} ${o.kind}`); continue; }
    let Cls;
    try {
      Cls = (await import(`kubernetes-models/${mod}`))[o.kind];
    } catch (e) { Cls = undefined; }
    if (!Cls) { notOk(`${where}: a known kind`, `${o.apiVersion} ${o.kind}`); continue; }
    try {
      new Cls(o).validate();
      ok(`${where}: ${o.kind} ${o.metadata && o.metadata.name} is valid`);
    } catch (e) {
      notOk(`${where}: ${o.kind} ${o.metadata && o.metadata.name} is valid`, e.message.slice(0, 400));
    }
  }
}
tap.exit();
